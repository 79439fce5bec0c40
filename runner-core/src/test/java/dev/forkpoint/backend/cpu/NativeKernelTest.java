package dev.forkpoint.backend.cpu;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The native CPU kernels against their Java twins, for every instruction-set variant this machine runs (the others
 * are skipped with a line): Q8_0 and Q4_0 matrices with ragged shapes (odd block counts, row counts that do not divide
 * among the threads), 1 … 16 tokens. With unit scales every result is an integer sum, exact in float: native, Java
 * and the exact value must be the same bits. With real scales both stay within float rounding of a double reference
 * (|error| ≤ 1e-6 · blocks · Σ|terms|). A batch — up to 16 decode rows, or a prefill of more — equals its rows run
 * alone, and a slice of rows the same rows of the whole, bit for bit (what the engine's batching relies on). Without a C compiler the kernels say so and the CPU
 * backend runs the Java kernels.
 */
class NativeKernelTest {
    @RegisterExtension
    static final NativeVariants.Fixture fixture = new NativeVariants.Fixture();

    private static MemorySegment quantized(GgmlType type, float[] w) {
        MemorySegment seg = Arena.ofAuto().allocate(type.bytesFor(w.length));
        Quantization.quantize(type, w, 0, w.length, seg, 0);
        return seg;
    }

    private static PackedMatrix matrix(GgmlType type, MemorySegment seg, int rows, int cols, NativeKernels k) {
        return PackedMatrix.of(new GgmlTensor("blk.0.test.weight", type, new long[] {cols, rows}, seg), k);
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void unitScalesGiveExactIntegerSumsOnEveryPath(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(3);
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
            int rows = 29, cols = 32 * 7;   // a whole 16-row tile and a partial one, an odd last block
            float[] w = unitScaleWeights(type, rows * cols, rnd);
            MemorySegment seg = quantized(type, w);
            for (int n : new int[] {1, 3, 16}) {
                float[] x = unitScaleActivations(n * cols, rnd);
                float[] java = fixture.multiply(matrix(type, seg, rows, cols, null), x, n), nat = fixture.multiply(matrix(type, seg, rows, cols, k), x, n);
                assertExactSums(w, x, rows, cols, n, java, nat, type + " " + v);
            }
        }
    }

    /** Weights whose blocks quantise to scale 1: integers with the block's extreme at 127 (Q8_0) or −8 (Q4_0). */
    private static float[] unitScaleWeights(GgmlType type, int count, Random rnd) {
        float[] w = new float[count];
        for (int b = 0; b < w.length / 32; b++) {
            for (int j = 0; j < 32; j++) {
                w[b * 32 + j] = type == GgmlType.Q8_0 ? rnd.nextInt(255) - 127 : rnd.nextInt(16) - 8;
            }
            w[b * 32 + rnd.nextInt(32)] = type == GgmlType.Q8_0 ? 127 : -8;
        }
        return w;
    }

    /** Activations quantising to scale 1: integers with 127 in each block. */
    private static float[] unitScaleActivations(int count, Random rnd) {
        float[] x = new float[count];
        for (int b = 0; b < x.length / 32; b++) {
            for (int j = 0; j < 32; j++) x[b * 32 + j] = rnd.nextInt(255) - 127;
            x[b * 32 + rnd.nextInt(32)] = 127;
        }
        return x;
    }

    /** Every (token, row) of java and nat (token-major) is the exact integer Σ w·x, in the same bits. */
    private static void assertExactSums(float[] w, float[] x, int rows, int cols, int n, float[] java, float[] nat, String what) {
        for (int t = 0; t < n; t++) {
            for (int r = 0; r < rows; r++) {
                long exact = 0;
                for (int c = 0; c < cols; c++) exact += (long) w[r * cols + c] * (long) x[t * cols + c];
                int at = t * rows + r;
                NativeVariants.assertExactSum(exact, java[at], nat[at], what + ", token " + t + " row " + r);
            }
        }
    }

    /**
     * Every token count a call takes, 1 … 16, and 17 (a call of 16 and one of 1), each its own path in the VNNI kernels
     * (one token without the transpose, 2 … 8 the few-tokens form, 9 … 15 the general body, 16 its copy): on 53 rows
     * (three whole 16-row tiles and a tail of 5) of 11 blocks (eight whose scales come four at a time, three gathered),
     * with unit scales the exact integer sums, and with real scales every token's results the bits of that token alone
     * and a slice's (from row 3, every row in another lane) the bits of the whole.
     */
    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void everyTokenCountIsExactAndEqualsItsTokensAloneAndItsSlicesBitForBit(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(41);
        int rows = 53, cols = 32 * 11;
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
            float[] unit = unitScaleWeights(type, rows * cols, rnd);
            MemorySegment unitSeg = quantized(type, unit);
            float[] w = new float[rows * cols];
            for (int i = 0; i < w.length; i++) w[i] = (float) rnd.nextGaussian();
            PackedMatrix real = matrix(type, quantized(type, w), rows, cols, k);
            for (int n = 1; n <= 17; n++) {
                String what = type + " " + v + " n=" + n;
                float[] x = unitScaleActivations(n * cols, rnd);
                float[] java = fixture.multiply(matrix(type, unitSeg, rows, cols, null), x, n);
                float[] nat = fixture.multiply(matrix(type, unitSeg, rows, cols, k), x, n);
                assertExactSums(unit, x, rows, cols, n, java, nat, what);
                float[] g = NativeVariants.gaussian(n * cols, rnd);
                float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(real, g, n, fixture.pool(), what);
                BatchInvariance.assertSliceEqualsWhole(real, 3, rows - 3, g, n, batch, fixture.pool(), what);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void realScalesAreWithinFloatRoundingOfTheJavaKernelsAndOfDouble(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(17);
        int[][] shapes = {{1, 32}, {7, 64}, {37, 96 + 32 * 3}, {129, 32 * 45}, {5, 4096}, {3, 32 * 600}};   // 600 blocks: the Q4_0 and Q8_0 VNNI kernels in passes of 13 tokens; 45 blocks: an odd last block (its scales gathered)
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
            for (int[] shape : shapes) {
                int rows = shape[0], cols = shape[1], blocks = cols / 32;
                float[] w = new float[rows * cols];
                for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.3);
                MemorySegment seg = quantized(type, w);
                float[] wq = new float[w.length];
                Quantization.dequantize(type, seg, 0, wq, 0, wq.length);
                for (int n : new int[] {1, 2, 5, 9, 15, 16, 17, 33}) {
                    float[] x = NativeVariants.gaussian(n * cols, rnd);
                    float[] xq = Q8Activations.q8_0(x, n, cols).dequantized();
                    float[] java = fixture.multiply(matrix(type, seg, rows, cols, null), x, n), nat = fixture.multiply(matrix(type, seg, rows, cols, k), x, n);
                    for (int t = 0; t < n; t++) {
                        for (int r = 0; r < rows; r++) {
                            double ref = 0, magnitude = 0;
                            for (int c = 0; c < cols; c++) {
                                double term = (double) wq[r * cols + c] * xq[t * cols + c];
                                ref += term;
                                magnitude += Math.abs(term);
                            }
                            double bound = 1e-6 * blocks * magnitude + 1e-30;
                            int at = t * rows + r;
                            String what = type + " " + v + " " + rows + "×" + cols + " n=" + n + " token " + t + " row " + r;
                            assertTrue(Math.abs(nat[at] - ref) <= bound, what + ": native " + nat[at] + " vs " + ref);
                            assertTrue(Math.abs(nat[at] - java[at]) <= bound, what + ": native " + nat[at] + " vs Java " + java[at]);
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void batchesAndSlicesEqualTheirRowsAloneBitForBit(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(29);
        // 41 rows go as slices of 16, 16 and 9 rows, the slice from row 5 as 16 and 7: whole and partial 16-row tiles
        // of the Q4_0 and Q8_0 VNNI kernels, each row in another lane than in the whole
        int rows = 41, cols = 32 * 9;
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
            float[] w = new float[rows * cols];
            for (int i = 0; i < w.length; i++) w[i] = (float) rnd.nextGaussian();
            PackedMatrix m = matrix(type, quantized(type, w), rows, cols, k);
            for (int n : new int[] {1, 2, 7, 9, 15, 16, 17, 33, 40}) {   // above 16: a prefill, in calls of 16 tokens; 9, 15: the general body
                float[] x = NativeVariants.gaussian(n * cols, rnd);
                String what = type + " " + v + " n=" + n;
                float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(m, x, n, fixture.pool(), what);
                BatchInvariance.assertSliceEqualsWhole(m, 5, 23, x, n, batch, fixture.pool(), what);
            }
        }
    }

    @Test
    void theEnvironmentSetsWhatAutoMeansAndAnExplicitChoiceWins() {
        assertEquals(KernelChoice.JAVA, NativeKernels.resolve(KernelChoice.AUTO, Map.of(NativeKernels.ENV, "java")));
        assertEquals(KernelChoice.NATIVE, NativeKernels.resolve(KernelChoice.AUTO, Map.of(NativeKernels.ENV, " Native ")));
        assertEquals(KernelChoice.AUTO, NativeKernels.resolve(KernelChoice.AUTO, Map.of()));
        assertEquals(KernelChoice.NATIVE, NativeKernels.resolve(KernelChoice.NATIVE, Map.of(NativeKernels.ENV, "java")));
        assertEquals(KernelChoice.JAVA, NativeKernels.resolve(KernelChoice.JAVA, Map.of(NativeKernels.ENV, "native")));
        var e = assertThrows(dev.forkpoint.InvalidInputException.class,
                () -> NativeKernels.resolve(KernelChoice.AUTO, Map.of(NativeKernels.ENV, "fast")));
        assertEquals("$FORKPOINT_KERNELS must be java, native or auto, got 'fast'", e.getMessage());
    }

    @Test
    void theEnvironmentPinsAVariantThisCpuRunsAndRefusesOthersNamingTheVariable() {
        var runnable = java.util.List.of(NativeKernels.Variant.AVX512_VNNI, NativeKernels.Variant.AVX2, NativeKernels.Variant.PORTABLE);
        assertEquals(NativeKernels.Variant.AVX512_VNNI, NativeKernels.pick(runnable, Map.of()));
        assertEquals(NativeKernels.Variant.AVX512_VNNI, NativeKernels.pick(runnable, Map.of(NativeKernels.VARIANT_ENV, " ")));
        assertEquals(NativeKernels.Variant.AVX2, NativeKernels.pick(runnable, Map.of(NativeKernels.VARIANT_ENV, " AVX2 ")));
        assertEquals(NativeKernels.Variant.PORTABLE, NativeKernels.pick(runnable, Map.of(NativeKernels.VARIANT_ENV, "c")));
        var notHere = assertThrows(InvalidInputException.class, () -> NativeKernels.pick(runnable, Map.of(NativeKernels.VARIANT_ENV, "neon")));
        assertEquals("$FORKPOINT_KERNEL_VARIANT=neon: this CPU runs avx512vnni, avx2, c", notHere.getMessage());
        var unknown = assertThrows(InvalidInputException.class, () -> NativeKernels.pick(runnable, Map.of(NativeKernels.VARIANT_ENV, "sse4")));
        assertEquals("$FORKPOINT_KERNEL_VARIANT must be one of avx512vnni, avx2, neon, c, got 'sse4'", unknown.getMessage());
    }

    @Test
    void withoutACompilerTheKernelsSaySoAndTheBackendRunsJava(@TempDir Path cache) {
        Map<String, String> noCompiler = Map.of("PATH", cache.toString());   // a PATH with no cc, gcc or clang
        assertEquals(Optional.empty(), NativeBuild.compiler(noCompiler));
        Object none = NativeKernels.load(noCompiler, cache);
        assertEquals("no C compiler found ($FORKPOINT_CC, $CC, then cc, gcc, clang on the PATH)", none);
        assertFalse(Files.exists(cache.resolve("native")), "nothing was built");
        assertEquals(Optional.empty(), NativeKernels.forChoice(KernelChoice.AUTO, none), "auto: the Java kernels");
        var refused = assertThrows(InvalidInputException.class, () -> NativeKernels.forChoice(KernelChoice.NATIVE, none));
        assertEquals("--kernels native: no C compiler found ($FORKPOINT_CC, $CC, then cc, gcc, clang on the PATH); use --kernels java or auto",
                refused.getMessage());
    }

    @Test
    void aCompilerThatFailsIsItsOwnMessage(@TempDir Path cache) throws Exception {
        Path fake = cache.resolve("broken-cc");
        Files.writeString(fake, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo broken 1.0; exit 0; fi\necho 'broken-cc: cannot compile' >&2\nexit 1\n");
        Assumptions.assumeTrue(fake.toFile().setExecutable(true), "an executable script");
        Object none = NativeKernels.load(Map.of("FORKPOINT_CC", fake.toString(), "PATH", ""), cache);
        assertTrue(none instanceof String s && s.startsWith(fake + " could not build the kernels: broken-cc: cannot compile"), String.valueOf(none));
    }

    @Test
    void nativeIsRefusedNamingTheOptionWhenItCannotBeBuilt() {
        Object library = NativeKernels.library(System.getenv());
        if (library instanceof NativeKernels.Library) {
            try (CpuBackend b = new CpuBackend(1, KernelChoice.NATIVE)) {
                assertTrue(b.kernelsInUse().startsWith("native "), b.kernelsInUse());
            }
        } else {
            var e = assertThrows(InvalidInputException.class, () -> new CpuBackend(1, KernelChoice.NATIVE));
            assertTrue(e.getMessage().startsWith("--kernels native: "), e.getMessage());
        }
        try (CpuBackend b = new CpuBackend(1, KernelChoice.JAVA)) {
            assertEquals("java", b.kernelsInUse());
        }
    }
}
