package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The native Q4_K and Q6_K kernels ({@code native/cpu/forkpoint_kquants.c}) against their Java twins
 * ({@link Q4KMatrix}, {@link Q6KMatrix}) and against a double-precision reference computed here from the blocks'
 * fields (this test's own reading of the GGML layouts), for every instruction-set variant this machine runs (the
 * others are skipped with a line). Weights are random super-blocks (every byte random but the f16 scales: every
 * 6-bit scale and min, every code, Q6_K scales down to −128) and Gaussian rows quantised by {@link Quantization};
 * row counts are ragged (1 … 129, split unevenly among the threads), token counts 1 … 20 (crossing the native
 * calls' 16-token chunks and the Java kernels' switch to the prefill GEMM above 16).
 *
 * <p>Bounds, with u = 2⁻²⁴ and G = Σ over the row of |d_x|·(|d·sc·q| + |dmin·m|)·|x| (Q4_K) or
 * |d_x|·|d·sc|·(q + 32)·|x| (Q6_K), which bounds every partial sum either side forms: the native kernels and the Java
 * decode kernel (n ≤ 16) are within (2·blocks + 32)·u·G of the exact value (exact int32 inner sums, then at most two
 * float steps per super-block per lane, the f16 · d_x products and a lane sum); the Java prefill GEMM (n &gt; 16, float
 * products of dequantised values over all columns) within (cols + 8)·u·G; native and Java within the sum of their
 * two bounds. With unit scales (d = dmin = d_x = 1) every partial sum is an integer below 2²⁴: native, Java and the
 * exact value are the same bits. A token's results do not depend on the token count or the slice of rows.
 */
class NativeKQuantKernelTest {
    private static final double U = 0x1p-24;
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final GgmlType[] TYPES = {GgmlType.Q4_K, GgmlType.Q6_K};
    @RegisterExtension
    static final NativeVariants.Fixture fixture = new NativeVariants.Fixture();

    private static int bytes(GgmlType type) {
        return type == GgmlType.Q4_K ? 144 : 210;
    }

    private static PackedMatrix matrix(GgmlType type, MemorySegment seg, int rows, int cols, NativeKernels k) {
        return PackedMatrix.of(new GgmlTensor("blk.0.test.weight", type, new long[] {cols, rows}, seg), k);
    }

    /** Super-blocks of random bytes, their f16 scales set to `scale` (or random ones in [1e-4, 1e-2) when NaN). */
    private static MemorySegment randomBlocks(GgmlType type, int rows, int blocks, Random rnd, float scale) {
        int size = bytes(type);
        MemorySegment seg = Arena.ofAuto().allocate((long) rows * blocks * size);
        byte[] all = new byte[(int) seg.byteSize()];
        rnd.nextBytes(all);
        MemorySegment.copy(all, 0, seg, ValueLayout.JAVA_BYTE, 0, all.length);
        for (long o = 0; o < seg.byteSize(); o += size) {
            if (type == GgmlType.Q4_K) {
                seg.set(F16, o, f16(scale, rnd));
                seg.set(F16, o + 2, f16(scale, rnd));
            } else {
                seg.set(F16, o + 208, f16(scale, rnd));
            }
        }
        return seg;
    }

    private static short f16(float scale, Random rnd) {
        return Float.floatToFloat16(Float.isNaN(scale) ? (float) (1e-4 + rnd.nextDouble() * 1e-2) : scale);
    }

    private static MemorySegment quantized(GgmlType type, int rows, int cols, Random rnd) {
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.3);
        MemorySegment seg = Arena.ofAuto().allocate(type.bytesFor(w.length));
        Quantization.quantize(type, w, 0, w.length, seg, 0);
        return seg;
    }

    /** Each weight as its exact value (value[i]) and the magnitude of what a kernel sums for it (gross[i]). */
    private record Decoded(double[] value, double[] gross) {}

    /** This test's own reading of the layouts (see forkpoint_kquants.c). */
    private static Decoded decode(GgmlType type, MemorySegment seg, int rows, int cols) {
        int blocks = cols / 256, size = bytes(type);
        double[] value = new double[rows * cols], gross = new double[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < blocks; b++) {
                long o = ((long) r * blocks + b) * size;
                for (int e = 0; e < 256; e++) {
                    int at = r * cols + b * 256 + e;
                    if (type == GgmlType.Q4_K) {
                        double d = Float.float16ToFloat(seg.get(F16, o)), dmin = Float.float16ToFloat(seg.get(F16, o + 2));
                        int k = e / 64, hi = (e % 64) / 32, i = e % 32, j = 2 * k + hi;
                        int sc, m;
                        if (j < 4) {
                            sc = u8(seg, o + 4 + j) & 63;
                            m = u8(seg, o + 8 + j) & 63;
                        } else {
                            sc = (u8(seg, o + 8 + j) & 0xf) | ((u8(seg, o + j) >> 6) << 4);
                            m = (u8(seg, o + 8 + j) >> 4) | ((u8(seg, o + 4 + j) >> 6) << 4);
                        }
                        int packed = u8(seg, o + 16 + 32 * k + i), q = hi == 1 ? packed >> 4 : packed & 15;
                        value[at] = d * sc * q - dmin * m;
                        gross[at] = Math.abs(d * sc * q) + Math.abs(dmin * m);
                    } else {
                        double d = Float.float16ToFloat(seg.get(F16, o + 208));
                        int h = e / 128, part = (e % 128) / 32, l = e % 32;
                        int lo = u8(seg, o + 64 * h + l), lo32 = u8(seg, o + 64 * h + 32 + l), top = u8(seg, o + 128 + 32 * h + l);
                        int q = switch (part) {
                            case 0 -> (lo & 15) | ((top & 3) << 4);
                            case 1 -> (lo32 & 15) | (((top >> 2) & 3) << 4);
                            case 2 -> (lo >> 4) | (((top >> 4) & 3) << 4);
                            default -> (lo32 >> 4) | (((top >> 6) & 3) << 4);
                        };
                        int sc = seg.get(ValueLayout.JAVA_BYTE, o + 192 + e / 16);
                        value[at] = d * sc * (q - 32);
                        gross[at] = Math.abs(d * sc) * (q + 32);
                    }
                }
            }
        }
        return new Decoded(value, gross);
    }

    private static int u8(MemorySegment seg, long at) {
        return seg.get(ValueLayout.JAVA_BYTE, at) & 0xff;
    }

    /** {exact, G} of row r times token t of the activations as the kernels see them (Q8_K codes and scales). */
    private static double[] reference(Decoded w, Q8Activations a, int r, int t, int cols) {
        double exact = 0, gross = 0;
        int blocks = cols / 256;
        for (int c = 0; c < cols; c++) {
            double dx = a.d()[t * blocks + c / 256], x = a.q()[t * cols + c];
            exact += w.value()[r * cols + c] * dx * x;
            gross += w.gross()[r * cols + c] * Math.abs(dx * x);
        }
        return new double[] {exact, gross};
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void unitScalesGiveExactIntegerSumsOnEveryPath(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(5);
        int rows = 13, blocks = 3, cols = 256 * blocks;
        for (GgmlType type : TYPES) {
            // d = dmin = 1; scales and mins small enough (Q4_K 0 … 7, Q6_K −4 … 3) that every partial sum stays below 2^24
            MemorySegment seg = randomBlocks(type, rows, blocks, rnd, 1f);
            for (long o = 0; o < seg.byteSize(); o += bytes(type)) {
                if (type == GgmlType.Q4_K) {
                    for (int j = 0; j < 12; j++) seg.set(ValueLayout.JAVA_BYTE, o + 4 + j, (byte) (j < 8 ? rnd.nextInt(8) : rnd.nextInt(8) | rnd.nextInt(8) << 4));
                } else {
                    for (int g = 0; g < 16; g++) seg.set(ValueLayout.JAVA_BYTE, o + 192 + g, (byte) (rnd.nextInt(8) - 4));
                }
            }
            Decoded w = decode(type, seg, rows, cols);
            for (int n : new int[] {1, 3, 16, 17, 20}) {
                // activations quantising to d_x = 1: integers −31 … 31 and one −127 per super-block (its extreme)
                float[] x = new float[n * cols];
                for (int b = 0; b < x.length / 256; b++) {
                    for (int j = 0; j < 256; j++) x[b * 256 + j] = rnd.nextInt(63) - 31;
                    x[b * 256 + rnd.nextInt(256)] = -127;
                }
                Q8Activations a = Q8Activations.q8_K(x, n, cols);
                float[] java = fixture.multiply(matrix(type, seg, rows, cols, null), x, n), nat = fixture.multiply(matrix(type, seg, rows, cols, k), x, n);
                for (int t = 0; t < n; t++) {
                    for (int r = 0; r < rows; r++) {
                        double[] ref = reference(w, a, r, t, cols);
                        assertTrue(ref[1] < 0x1p24, "the test's premise: G " + ref[1] + " < 2^24");
                        int at = t * rows + r;
                        assertEquals((float) ref[0], java[at], type + " Java n=" + n + ", token " + t + " row " + r);
                        assertEquals(Float.floatToRawIntBits(java[at]), Float.floatToRawIntBits(nat[at]),
                                type + " " + v + " n=" + n + ", token " + t + " row " + r + ": " + nat[at] + " vs exact " + ref[0]);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void realScalesAreWithinFloatRoundingOfTheJavaKernelsAndOfDouble(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(23);
        int[][] shapes = {{1, 256}, {7, 512}, {37, 768}, {129, 1280}, {5, 4096}, {130, 2816}};
        for (GgmlType type : TYPES) {
            double worstNative = 0, worstJava = 0;
            for (int[] shape : shapes) {
                int rows = shape[0], cols = shape[1], blocks = cols / 256;
                for (boolean random : new boolean[] {true, false}) {
                    MemorySegment seg = random ? randomBlocks(type, rows, blocks, rnd, Float.NaN) : quantized(type, rows, cols, rnd);
                    Decoded w = decode(type, seg, rows, cols);
                    PackedMatrix javaMatrix = matrix(type, seg, rows, cols, null), nativeMatrix = matrix(type, seg, rows, cols, k);
                    for (int n = 1; n <= 20; n++) {
                        float[] x = NativeVariants.gaussian(n * cols, rnd);
                        if (blocks > 1) Arrays.fill(x, 256, 512, 0f);   // an all-zero super-block: d_x = 0
                        Q8Activations a = Q8Activations.q8_K(x, n, cols);
                        float[] java = fixture.multiply(javaMatrix, x, n), nat = fixture.multiply(nativeMatrix, x, n);
                        double nativeSteps = 2.0 * blocks + 32, javaSteps = n <= KernelSupport.DECODE_MAX_ROWS ? nativeSteps : cols + 8;
                        for (int t = 0; t < n; t++) {
                            for (int r = 0; r < rows; r++) {
                                double[] ref = reference(w, a, r, t, cols);
                                double g = ref[1] + Double.MIN_NORMAL;
                                int at = t * rows + r;
                                String what = type + " " + v + (random ? " random" : " quantised") + " " + rows + "×" + cols
                                        + " n=" + n + " token " + t + " row " + r;
                                double eNative = Math.abs(nat[at] - ref[0]) / (U * g), eJava = Math.abs(java[at] - ref[0]) / (U * g);
                                worstNative = Math.max(worstNative, eNative / nativeSteps);
                                worstJava = Math.max(worstJava, eJava / javaSteps);
                                assertTrue(eNative <= nativeSteps, what + ": native " + nat[at] + " vs exact " + ref[0] + " (G " + g + ")");
                                assertTrue(eJava <= javaSteps, what + ": Java " + java[at] + " vs exact " + ref[0] + " (G " + g + ")");
                                assertTrue(Math.abs(nat[at] - java[at]) <= (nativeSteps + javaSteps) * U * g,
                                        what + ": native " + nat[at] + " vs Java " + java[at]);
                            }
                        }
                    }
                }
            }
            System.out.printf("NativeKQuantKernelTest %s %s: worst |error| / bound: native %.3f, Java %.3f%n", type, v, worstNative, worstJava);
        }
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void batchesAndSlicesEqualTheirRowsAloneBitForBit(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(31);
        int rows = 41, cols = 256 * 3;
        for (GgmlType type : TYPES) {
            PackedMatrix m = matrix(type, quantized(type, rows, cols, rnd), rows, cols, k);
            assertEquals("native " + k.variant().suffix, m instanceof Q4KMatrix q4 ? q4.kernels() : ((Q6KMatrix) m).kernels());
            for (int n : new int[] {2, 7, 16, 17, 20, 40}) {   // above 16: a prefill, in calls of 16 tokens
                float[] x = NativeVariants.gaussian(n * cols, rnd);
                String what = type + " " + v + " n=" + n;
                float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(m, x, n, fixture.pool(), what);
                BatchInvariance.assertSliceEqualsWhole(m, 5, 23, x, n, batch, fixture.pool(), what);
            }
        }
    }

    /**
     * Every token count of one native call (1 … 16: the AVX-512 kernels have a body per count, one path for a few
     * tokens and another for more) and a few across calls, on row counts around a tile of sixteen rows (the last tile
     * ragged; the pool hands each call a range of rows in multiples of 8, so 130 and 201 rows give calls of whole tiles
     * and a ragged one), and slices that start inside a tile and end inside another or hold fewer than sixteen rows:
     * every token alone, every slice, the same bits as the whole batch.
     */
    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void everyTokenCountAndRaggedTileEqualTheirTokensAloneAndSlices(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(47);
        int cols = 256 * 2;
        for (GgmlType type : TYPES) {
            for (int rows : new int[] {1, 15, 17, 130, 201}) {
                PackedMatrix m = matrix(type, randomBlocks(type, rows, cols / 256, rnd, Float.NaN), rows, cols, k);
                for (int n = 1; n <= 18; n++) {
                    float[] x = NativeVariants.gaussian(n * cols, rnd);
                    String what = type + " " + v + " rows=" + rows + " n=" + n;
                    float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(m, x, n, fixture.pool(), what);
                    if (rows > 3) {
                        BatchInvariance.assertSliceEqualsWhole(m, 1, rows - 2, x, n, batch, fixture.pool(), what);
                        BatchInvariance.assertSliceEqualsWhole(m, rows / 2, rows - rows / 2, x, n, batch, fixture.pool(), what);
                        BatchInvariance.assertSliceEqualsWhole(m, 3, 1, x, n, batch, fixture.pool(), what);
                        BatchInvariance.assertSliceEqualsWhole(m, 5, Math.min(rows - 5, 40), x, n, batch, fixture.pool(), what);
                    }
                }
            }
        }
    }

    /**
     * Rows wide enough that the AVX-512 row form (a few tokens) takes the tokens in groups, each reading the tile again
     * (11 super-blocks in groups of five tokens, 32 in groups of two; an odd count leaves the last pair of super-blocks
     * half empty), and rows of 56 super-blocks (a 7–8B model's down projection), which only one token takes in the row
     * form: every token count up to one past the row form, alone and sliced,
     * the same bits as the whole batch.
     */
    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void wideRowsInTokenGroupsEqualTheirTokensAloneAndSlices(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(59);
        int rows = 130;   // calls of whole tiles (see above)
        for (int cols : new int[] {256 * 11, 256 * 32, 256 * 56}) {
            for (GgmlType type : TYPES) {
                PackedMatrix m = matrix(type, randomBlocks(type, rows, cols / 256, rnd, Float.NaN), rows, cols, k);
                for (int n = 1; n <= 9; n++) {
                    float[] x = NativeVariants.gaussian(n * cols, rnd);
                    String what = type + " " + v + " cols=" + cols + " n=" + n;
                    float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(m, x, n, fixture.pool(), what);
                    BatchInvariance.assertSliceEqualsWhole(m, 3, 120, x, n, batch, fixture.pool(), what);
                }
            }
        }
    }
}
