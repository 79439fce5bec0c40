package dev.forkpoint.metal;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The Metal sources of the SDPA decode kernel ({@code native/metal}) run on the CPU: each pass's whole Metal library,
 * exactly as {@link SdpaDecodeSource#standalone} writes it for the pipeline compiler, is compiled as C++20 against a
 * stand-in {@code <metal_stdlib>} (test resources: one OS thread per GPU thread, real barriers, SIMD sums across the
 * lanes of a SIMD group) and run over the grids an {@link SdpaPlan} asks for — every pass-1 dispatch, then pass 2 on
 * its partials. The outputs, assembled from the tiles, must equal naive causal attention (double: row r of R sees the
 * keys up to its own position, the last R of the sequence) within 1e-5 relative L2 per (head, row), for f32 and f16 keys, row splits, head splits, more blocks than keys and ragged head dims. Needs
 * a C++ compiler (g++ or clang++); skipped with one line without one. A Mac runs the same sources on Metal
 * ({@code MetalSdpaKernelTest}).
 */
class SdpaKernelCpuEmulationTest {
    private static final double TOLERANCE = 1e-5;
    private static String compiler;

    @TempDir
    Path dir;

    @BeforeAll
    static void findCompiler() {
        for (String c : List.of("g++", "clang++")) {
            try {
                Process p = new ProcessBuilder(c, "--version").redirectErrorStream(true).start();
                p.getInputStream().readAllBytes();
                if (p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0) {
                    compiler = c;
                    return;
                }
            } catch (IOException | InterruptedException ignored) {
                // try the next
            }
        }
        System.err.println("SdpaKernelCpuEmulationTest skipped: no g++ or clang++ to run the Metal sources on the CPU");
    }

    @Test
    void theOllamaCrashShapeOnIts896Pipeline() throws Exception {
        // gqa 8 × 4 rows at head dim 256, f16: MLX launched 1024 threads here; the plan makes two dispatches of 512
        SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(896), new SdpaShape(8, 4, 256, 200, 2));
        assertTrue(plan.maxThreadsPerThreadgroup() <= 896, plan::toString);
        check(plan.limits(), plan.shape(), 1, 10);
    }

    @Test
    void rowSplitF32() throws Exception {
        // 4 heads × 2 rows = 8 SIMD groups do not fit 128 threads: two dispatches of one row each
        check(new GpuLimits(128, 32, 32 * 1024), new SdpaShape(4, 2, 64, 300, 4), 2, 11);
    }

    @Test
    void headSplitF16RaggedHeadDim() throws Exception {
        // 64 threads = 2 SIMD groups < gqa 4: heads split, one row per dispatch; 96 = 3 elements per lane
        check(new GpuLimits(64, 32, 32 * 1024), new SdpaShape(4, 2, 96, 1000, 2), 2, 12);
    }

    @Test
    void fewerKeysThanBlocksAndAHeadDimBelowTheSimdWidth() throws Exception {
        check(new GpuLimits(1024, 32, 32 * 1024), new SdpaShape(2, 3, 24, 5, 4), 1, 13);
        check(new GpuLimits(1024, 32, 32 * 1024), new SdpaShape(1, 1, 128, 1, 2), 3, 14);
    }

    @Test
    void smallThreadgroupMemoryShrinksTheKeyTile() throws Exception {
        SdpaPlan plan = SdpaPlanner.plan(new GpuLimits(256, 32, 4096), new SdpaShape(2, 1, 256, 700, 4));
        assertTrue(plan.pass1().getFirst().keyTile() < SdpaPlanner.MAX_KEY_TILE, "the plan uses a smaller tile");
        check(plan.limits(), plan.shape(), 2, 15);
    }

    private void check(GpuLimits limits, SdpaShape shape, int kvHeads, long seed) throws Exception {
        Assumptions.assumeTrue(compiler != null, "no C++ compiler");
        SdpaPlan plan = SdpaPlanner.plan(limits, shape);
        int dim = shape.headDim(), keys = shape.keyLength(), capacity = keys + 3, pairs = shape.pairs();
        SplittableRandom random = new SplittableRandom(seed);
        boolean half = shape.dtypeBytes() == 2;
        float[][][] q = new float[kvHeads][pairs][dim];        // [kv head][head·rows + row][dim]
        float[][][] k = new float[kvHeads][keys][dim], v = new float[kvHeads][keys][dim];
        for (int h = 0; h < kvHeads; h++) {
            for (float[] row : q[h]) fill(row, random, 1.5f, false);
            for (int t = 0; t < keys; t++) {
                fill(k[h][t], random, 1f, half);
                fill(v[h][t], random, 1f, half);
            }
        }
        writeInputs(q, k, v, kvHeads, capacity, dim, half);
        copyResource("metal_stdlib");
        copyResource("harness.h");
        Files.writeString(dir.resolve("main.cpp"), program(plan, kvHeads, capacity, half));
        run(List.of(compiler, "-std=c++20", "-O1", "-pthread", "-Wno-attributes", "-I", dir.toString(), "-o",
                dir.resolve("kernels").toString(), dir.resolve("main.cpp").toString()), "compile");
        run(List.of(dir.resolve("kernels").toString()), "run");

        float scale = (float) (1 / Math.sqrt(dim));
        for (int h = 0; h < kvHeads; h++) {
            double[][] want = new double[pairs][];
            for (int pair = 0; pair < pairs; pair++) {   // causal: row r of R sees keys [0, keys − (R − 1 − r))
                int visible = keys - (shape.queryRows() - 1 - pair % shape.queryRows());
                want[pair] = SdpaEmulation.naive(new float[][] {q[h][pair]}, java.util.Arrays.copyOf(k[h], visible),
                        java.util.Arrays.copyOf(v[h], visible), scale)[0];
            }
            float[][] got = new float[pairs][];
            for (int i = 0; i < plan.pass1().size(); i++) {
                PairTile tile = plan.pass1().get(i).tile();
                float[] out = readFloats(dir.resolve("out" + i + ".bin"));
                int tilePairs = tile.pairs();
                for (int p = 0; p < tilePairs; p++) {
                    int head = tile.firstHead() + p / tile.rows(), row = tile.firstRow() + p % tile.rows();
                    int pair = head * shape.queryRows() + row;
                    assertNull(got[pair], "pair " + pair + " covered twice");
                    got[pair] = java.util.Arrays.copyOfRange(out, (h * tilePairs + p) * dim, (h * tilePairs + p + 1) * dim);
                }
            }
            for (int pair = 0; pair < pairs; pair++) {
                assertNotNull(got[pair], "pair " + pair + " never covered");
                double err = relativeL2(want[pair], got[pair]);
                assertTrue(err < TOLERANCE, "kv head " + h + " pair " + pair + ": relative L2 " + err + " (" + plan.pass1().size()
                        + " dispatches, " + plan.blocks() + " blocks)");
            }
        }
    }

    /** main.cpp: each pass-1 dispatch's library and pass 2's in a namespace of its own, run in order. */
    private static String program(SdpaPlan plan, int kvHeads, int capacity, boolean half) {
        String type = half ? "half" : "float";
        SdpaShape shape = plan.shape();
        StringBuilder s = new StringBuilder("#include <metal_stdlib>\n#include \"harness.h\"\n");
        for (int i = 0; i < plan.pass1().size(); i++) {
            s.append("namespace pass1_").append(i).append(" {\n")
                    .append(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS1, SdpaDecodeSource.pass1Constants(plan, plan.pass1().get(i)), type, "kernel_main"))
                    .append("}\n");
        }
        s.append("namespace pass2 {\n").append(SdpaDecodeSource.standalone(SdpaDecodeSource.PASS2, SdpaDecodeSource.pass2Constants(plan), type, "kernel_main")).append("}\n");
        int pairs = shape.pairs(), dim = shape.headDim(), blocks = plan.blocks();
        s.append("int main() {\n")
                .append("  auto q = read_file<float>(\"q.bin\", ").append((long) kvHeads * pairs * dim).append(");\n")
                .append("  auto k = read_file<").append(type).append(">(\"k.bin\", ").append((long) kvHeads * capacity * dim).append(");\n")
                .append("  auto v = read_file<").append(type).append(">(\"v.bin\", ").append((long) kvHeads * capacity * dim).append(");\n")
                .append("  std::vector<float> scale{").append(1 / Math.sqrt(dim)).append("f};\n");
        for (int i = 0; i < plan.pass1().size(); i++) {
            Pass1Dispatch d = plan.pass1().get(i);
            int tilePairs = d.tile().pairs();
            long partials = (long) kvHeads * tilePairs * blocks;
            s.append("  {\n")
                    .append("    std::vector<int> params{").append(shape.keyLength()).append(", ").append(d.tile().firstHead()).append(", ")
                    .append(d.tile().firstRow()).append(", ").append(d.keysPerBlock()).append(", ").append(capacity).append("};\n")
                    .append("    std::vector<float> pmax(").append(partials).append("), psum(").append(partials).append("), pout(")
                    .append(partials * dim).append("), out(").append((long) kvHeads * tilePairs * dim).append(");\n")
                    .append("    run_grid(uint3{").append(blocks).append(", 1, ").append(kvHeads).append("}, uint3{")
                    .append(d.threadgroup().x()).append(", ").append(d.threadgroup().y()).append(", ").append(d.threadgroup().z())
                    .append("}, ").append(plan.limits().simdWidth()).append(", [&](const ThreadIds& t) {\n")
                    .append("      pass1_").append(i).append("::kernel_main(q.data(), k.data(), v.data(), params.data(), scale.data(),"
                            + " pmax.data(), psum.data(), pout.data(), t.threadgroup_position_in_grid, t.thread_position_in_threadgroup,"
                            + " t.thread_index_in_threadgroup, t.threads_per_threadgroup);\n    });\n")
                    .append("    run_grid(uint3{1, 1, ").append((long) kvHeads * tilePairs).append("}, uint3{")
                    .append(plan.pass2().threadgroup().x()).append(", ").append(plan.pass2().threadgroup().y()).append(", 1}, ")
                    .append(plan.limits().simdWidth()).append(", [&](const ThreadIds& t) {\n")
                    .append("      pass2::kernel_main(pmax.data(), psum.data(), pout.data(), out.data(), t.threadgroup_position_in_grid,"
                            + " t.thread_index_in_simdgroup, t.simdgroup_index_in_threadgroup);\n    });\n")
                    .append("    write_file(\"out").append(i).append(".bin\", out);\n  }\n");
        }
        return s.append("  return 0;\n}\n").toString();
    }

    private void writeInputs(float[][][] q, float[][][] k, float[][][] v, int kvHeads, int capacity, int dim, boolean half) throws IOException {
        ByteBuffer qb = ByteBuffer.allocate(kvHeads * q[0].length * dim * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float[][] h : q) for (float[] row : h) for (float x : row) qb.putFloat(x);
        Files.write(dir.resolve("q.bin"), qb.array());
        int bytes = half ? 2 : 4;
        for (var entry : Map.of("k.bin", k, "v.bin", v).entrySet()) {
            ByteBuffer b = ByteBuffer.allocate(kvHeads * capacity * dim * bytes).order(ByteOrder.LITTLE_ENDIAN);
            for (float[][] h : entry.getValue()) {
                for (int t = 0; t < capacity; t++) {
                    for (int e = 0; e < dim; e++) {
                        float x = t < h.length ? h[t][e] : 1e30f;   // capacity beyond the keys: never read
                        if (half) b.putShort(Float.floatToFloat16(t < h.length ? x : 0f));
                        else b.putFloat(x);
                    }
                }
            }
            Files.write(dir.resolve(entry.getKey()), b.array());
        }
    }

    /** Random values; for f16 inputs, values exactly representable in f16 (the reference sees what the kernel reads). */
    private static void fill(float[] row, SplittableRandom random, float scale, boolean half) {
        for (int e = 0; e < row.length; e++) {
            float x = (float) (random.nextDouble(-1, 1) * scale);
            row[e] = half ? Float.float16ToFloat(Float.floatToFloat16(x)) : x;
        }
    }

    private void copyResource(String name) throws IOException {
        try (InputStream in = getClass().getResourceAsStream("emulation/" + name)) {
            assertNotNull(in, "test resource emulation/" + name);
            Files.write(dir.resolve(name), in.readAllBytes());
        }
    }

    private void run(List<String> command, String what) throws Exception {
        Process p = new ProcessBuilder(new ArrayList<>(command)).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), what + " timed out");
        assertEquals(0, p.exitValue(), what + " failed:\n" + output);
    }

    private static float[] readFloats(Path file) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        float[] f = new float[b.remaining() / 4];
        for (int i = 0; i < f.length; i++) f[i] = b.getFloat();
        return f;
    }

    private static double relativeL2(double[] want, float[] got) {
        double num = 0, den = 0;
        for (int e = 0; e < want.length; e++) {
            num += (got[e] - want[e]) * (got[e] - want[e]);
            den += want[e] * want[e];
        }
        return Math.sqrt(num / den);
    }
}
