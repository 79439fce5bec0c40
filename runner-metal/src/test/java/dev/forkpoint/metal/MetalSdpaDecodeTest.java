package dev.forkpoint.metal;

import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxArray;
import dev.forkpoint.metal.mlxc.MlxC;
import dev.forkpoint.metal.mlxc.MlxSession;
import dev.forkpoint.metal.mlxc.MlxTestLibrary;
import dev.forkpoint.metal.objc.MetalPipelineCompiler;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The SDPA decode kernel on MLX. Everywhere MLX-C is: the tiles' outputs of row-split and head-split plans are put
 * back in (head, row) order ({@link MetalSdpaDecode#assemble}, checked value by value). On a Metal GPU (macOS arm64):
 * the FACTS §1 A shape — gqa 8 × 4 query rows at head dim 256, f16 keys — on a pipeline whose limit is forced to 896
 * runs in threadgroups of at most 896 threads and equals causal attention computed in double.
 */
@Tag("mlx")
class MetalSdpaDecodeTest {

    @Test
    void tilesArePutBackInHeadAndRowOrder() {
        Mlx mlx = MlxTestLibrary.require();
        int kvHeads = 2, dim = 3;
        SdpaShape shape = new SdpaShape(4, 3, dim, 500, 2);
        for (int limit : new int[] {128, 64, 1024}) {   // rows split; heads split (2 SIMD groups < gqa 4); one tile
            SdpaPlan plan = SdpaPlanner.plan(new GpuLimits(limit, 32, 32 * 1024), shape);
            try (MlxSession s = mlx.openSession()) {
                List<MlxArray> tiles = new ArrayList<>();
                for (Pass1Dispatch d : plan.pass1()) {   // value = code(kv head, head, row, e)
                    PairTile t = d.tile();
                    float[] v = new float[kvHeads * t.heads() * t.rows() * dim];
                    int i = 0;
                    for (int kv = 0; kv < kvHeads; kv++)
                        for (int h = 0; h < t.heads(); h++)
                            for (int r = 0; r < t.rows(); r++)
                                for (int e = 0; e < dim; e++) v[i++] = code(kv, t.firstHead() + h, t.firstRow() + r, e);
                    tiles.add(s.fromFloats(v, kvHeads, t.heads(), t.rows(), dim));
                }
                try (MlxArray out = MetalSdpaDecode.assemble(s, tiles, plan.pass1().stream().map(Pass1Dispatch::tile).toList(),
                        kvHeads * shape.gqa() * dim);
                     MlxArray c = s.contiguous(out)) {
                    assertArrayEquals(new int[] {shape.queryRows(), kvHeads * shape.gqa() * dim}, out.shape());
                    float[] got = s.toFloats(c);
                    for (int r = 0; r < shape.queryRows(); r++)
                        for (int kv = 0; kv < kvHeads; kv++)
                            for (int h = 0; h < shape.gqa(); h++)
                                for (int e = 0; e < dim; e++) {
                                    int at = r * kvHeads * shape.gqa() * dim + (kv * shape.gqa() + h) * dim + e;
                                    assertEquals(code(kv, h, r, e), got[at], "limit " + limit + ": row " + r + " kv " + kv + " head " + h + " e " + e);
                                }
                }
                for (MlxArray t : tiles) t.close();
            }
        }
    }

    private static float code(int kv, int head, int row, int e) {
        return kv * 1000 + head * 100 + row * 10 + e;
    }

    @Test
    void theOllamaCrashShapeOnA896PipelineEqualsAttention() {
        Mlx mlx = MlxTestLibrary.require();
        try (MlxSession s = mlx.openSession()) {
            boolean mac = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac");
            if (!s.onMetalGpu() && mac && "1".equals(System.getenv("FORKPOINT_REQUIRE_MLX"))) fail("MLX has no Metal GPU here");
            Assumptions.assumeTrue(s.onMetalGpu(), "the decode kernel runs on a Metal GPU; MLX's device here is not one");
            int kvHeads = 2, gqa = 8, rows = 4, dim = 256, keys = 1500, heads = kvHeads * gqa;
            RememberedLimits forced = new RememberedLimits();
            forced.remember("forkpoint_sdpa_decode_f16_d" + dim, 896);
            SdpaPlan plan = SdpaPlanner.plan(GpuLimits.apple(1024), new SdpaShape(gqa, rows, dim, keys, 2), "forkpoint_sdpa_decode_f16_d" + dim, forced);
            assertTrue(plan.maxThreadsPerThreadgroup() <= 896, plan::toString);

            SplittableRandom random = new SplittableRandom(7);
            float[] q = new float[rows * heads * dim];
            for (int i = 0; i < q.length; i++) q[i] = (float) random.nextDouble(-1.5, 1.5);
            float[][][] k = new float[kvHeads][keys][dim], v = new float[kvHeads][keys][dim];
            short[] kh = new short[kvHeads * keys * dim], vh = new short[kvHeads * keys * dim];
            for (int h = 0, i = 0; h < kvHeads; h++)
                for (int t = 0; t < keys; t++)
                    for (int e = 0; e < dim; e++, i++) {
                        kh[i] = Float.floatToFloat16((float) random.nextDouble(-1, 1));
                        vh[i] = Float.floatToFloat16((float) random.nextDouble(-1, 1));
                        k[h][t][e] = Float.float16ToFloat(kh[i]);
                        v[h][t][e] = Float.float16ToFloat(vh[i]);
                    }
            try (MetalSdpaDecode decode = new MetalSdpaDecode(s, MetalPipelineCompiler.open().compiler(), forced);
                 MlxArray qa = s.fromFloats(q, rows, heads * dim);
                 MlxArray ka = s.fromData(MemorySegment.ofArray(kh), MlxC.MLX_FLOAT16, kvHeads, keys, dim);
                 MlxArray va = s.fromData(MemorySegment.ofArray(vh), MlxC.MLX_FLOAT16, kvHeads, keys, dim);
                 MlxArray out = decode.attend(qa, ka, va, kvHeads, gqa, rows, dim, keys, MlxC.MLX_FLOAT16)) {
                float[] got = s.toFloats(out);
                double scale = 1 / Math.sqrt(dim);
                for (int r = 0; r < rows; r++) {
                    int visible = keys - (rows - 1 - r);
                    for (int h = 0; h < heads; h++) {
                        float[] qRow = java.util.Arrays.copyOfRange(q, (r * heads + h) * dim, (r * heads + h + 1) * dim);
                        double[] want = SdpaEmulation.naive(new float[][] {qRow}, java.util.Arrays.copyOf(k[h / gqa], visible),
                                java.util.Arrays.copyOf(v[h / gqa], visible), scale)[0];
                        double num = 0, den = 0;
                        for (int e = 0; e < dim; e++) {
                            double d = got[(r * heads + h) * dim + e] - want[e];
                            num += d * d;
                            den += want[e] * want[e];
                        }
                        assertTrue(Math.sqrt(num / den) < 1e-4, "row " + r + " head " + h + ": relative L2 " + Math.sqrt(num / den));
                    }
                }
            }
        }
    }
}
