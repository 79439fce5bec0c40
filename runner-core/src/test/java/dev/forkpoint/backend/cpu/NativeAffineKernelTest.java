package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The native MLX affine kernels (4 and 8 bits, {@code native/cpu/forkpoint_affine.c}) against the Java kernels and a
 * double reference, for every instruction-set variant this machine runs (the others are skipped with a line): random
 * codes, group sizes 32, 64, 128, scales and biases as F32, F16 and BF16, ragged shapes (1 … 129 rows; 1, 3, 7 and 19
 * groups per row, so odd block counts at group size 32) and 1 … 33 tokens.
 * <ul>
 * <li>With unit scales, integer biases and activations that quantise to scale 1 every term is an integer: native, Java
 * and the exact sum must be the same bits.</li>
 * <li>With real scales and biases the native result stays within float rounding of the double reference computed here
 * from the codes, scales, biases and the quantised activations, Σ_j (s·q_j + b)·d_k·q_x,j, and of the Java decode
 * kernel (n ≤ 16; above it the Java kernels take the float GEMM on unquantised activations): |error| ≤ 1e-6 ·
 * (blocks + 2) · M, with M = Σ_j (|s|·(q_j + 128 at 8 bits) + |b|)·|d_k·q_x,j| the magnitude of the terms either form of
 * the sum adds (q·s + b, or at 8 bits (q − 128)·s + (b + 128·s)).</li>
 * <li>A batch (16 decode tokens, a prefill of 17 or 33) equals its tokens run alone, and a slice of rows the same rows
 * of the whole, bit for bit.</li>
 * </ul>
 */
class NativeAffineKernelTest {
    private static final int[] BITS = {4, 8};
    private static final int[] GROUP_SIZES = {32, 64, 128};
    private static final GgmlType[] SCALE_TYPES = {GgmlType.F32, GgmlType.F16, GgmlType.BF16};
    @RegisterExtension
    static final NativeVariants.Fixture fixture = new NativeVariants.Fixture();

    /** A matrix of the given codes, scales and biases (each exactly representable in the scale type). */
    private static AffineTensor tensor(AffineFormat f, GgmlType st, int rows, int cols, int[] codes, float[] scales, float[] biases) {
        return new AffineCodec.AffineArrays(f, rows, cols, AffineCodec.pack(codes, f.bits()), scales, biases)
                .toTensor("model.layers.0.mlp.up_proj", st, Arena.ofAuto());
    }

    /** Activations that quantise to scale 1: integers with 127 in every block, so q_x = x. */
    private static float[] unitActivations(Random rnd, int n, int cols) {
        float[] x = new float[n * cols];
        for (int b = 0; b < x.length / 32; b++) {
            for (int j = 0; j < 32; j++) x[b * 32 + j] = rnd.nextInt(255) - 127;
            x[b * 32 + rnd.nextInt(32)] = 127;
        }
        return x;
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void unitScalesAndIntegerBiasesGiveExactIntegerSums(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(5);
        for (int bits : BITS) {
            for (int gs : GROUP_SIZES) {
                for (GgmlType st : SCALE_TYPES) {
                    AffineFormat f = new AffineFormat(bits, gs);
                    int rows = 13, cols = gs * (gs == 32 ? 7 : 2);
                    int groups = rows * cols / gs;
                    int[] codes = new int[rows * cols];
                    for (int i = 0; i < codes.length; i++) codes[i] = rnd.nextInt(f.maxCode() + 1);
                    float[] scales = new float[groups], biases = new float[groups];
                    for (int g = 0; g < groups; g++) {
                        scales[g] = 1;
                        biases[g] = -rnd.nextInt(f.maxCode() / 2 + 1);
                    }
                    AffineTensor t = tensor(f, st, rows, cols, codes, scales, biases);
                    for (int n : new int[] {1, 3, 16, 17}) {
                        float[] x = unitActivations(rnd, n, cols);
                        float[] java = fixture.multiply(PackedMatrix.of(t, (NativeKernels) null), x, n), nat = fixture.multiply(PackedMatrix.of(t, k), x, n);
                        for (int tok = 0; tok < n; tok++) {
                            for (int r = 0; r < rows; r++) {
                                long exact = 0;
                                for (int c = 0; c < cols; c++) {
                                    int g = (r * cols + c) / gs;
                                    exact += ((long) codes[r * cols + c] + (long) biases[g]) * (long) x[tok * cols + c];
                                }
                                int at = tok * rows + r;
                                String what = f.typeName() + " " + st + " " + v + " n=" + n + " token " + tok + " row " + r;
                                NativeVariants.assertExactSum(exact, java[at], nat[at], what);
                            }
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void realScalesAreWithinFloatRoundingOfDoubleAndOfTheJavaKernels(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(19);
        int[] rowCounts = {1, 7, 37, 129};
        int[] groupCounts = {1, 3, 7, 19};   // 19: more than the 16 groups the VNNI kernels convert at a time
        for (int bits : BITS) {
            for (int gs : GROUP_SIZES) {
                for (GgmlType st : SCALE_TYPES) {
                    AffineFormat f = new AffineFormat(bits, gs);
                    for (int shape = 0; shape < rowCounts.length; shape++) {
                        int rows = rowCounts[shape], cols = gs * groupCounts[(shape + bits + gs / 32) % groupCounts.length];
                        int blocks = cols / 32, groups = rows * cols / gs;
                        int[] codes = new int[rows * cols];
                        for (int i = 0; i < codes.length; i++) codes[i] = rnd.nextInt(f.maxCode() + 1);
                        float[] scales = new float[groups], biases = new float[groups];
                        for (int g = 0; g < groups; g++) {
                            // dyadic values exact in F32, F16 and BF16, biases near −s·maxCode/2 as MLX's quantiser gives
                            scales[g] = (1 + rnd.nextInt(127)) / 4096f;
                            float den = bits == 8 ? 16 : 64;   // numerators below 256: exact in BF16 too
                            biases[g] = -Math.round(scales[g] * f.maxCode() / 2 * den * (0.5 + rnd.nextDouble())) / den;
                        }
                        AffineTensor t = tensor(f, st, rows, cols, codes, scales, biases);
                        PackedMatrix java = PackedMatrix.of(t, (NativeKernels) null), nat = PackedMatrix.of(t, k);
                        for (int n : new int[] {1, 2, 5, 8, 9, 15, 16, 33}) {   // 9 and 15: the general body's ends
                            float[] x = NativeVariants.gaussian(n * cols, rnd);
                            float[] xq = Q8Activations.q8_0(x, n, cols).dequantized();
                            float[] outJava = fixture.multiply(java, x, n), outNative = fixture.multiply(nat, x, n);
                            for (int tok = 0; tok < n; tok++) {
                                for (int r = 0; r < rows; r++) {
                                    double ref = 0, magnitude = 0;
                                    for (int c = 0; c < cols; c++) {
                                        int g = (r * cols + c) / gs, q = codes[r * cols + c];
                                        double xc = xq[tok * cols + c];
                                        ref += ((double) scales[g] * q + biases[g]) * xc;
                                        magnitude += (Math.abs(scales[g]) * (q + (bits == 8 ? 128 : 0)) + Math.abs(biases[g])) * Math.abs(xc);
                                    }
                                    double bound = 1e-6 * (blocks + 2) * magnitude + 1e-30;
                                    int at = tok * rows + r;
                                    String what = f.typeName() + " " + st + " " + v + " " + rows + "×" + cols + " n=" + n + " token " + tok + " row " + r;
                                    assertTrue(Math.abs(outNative[at] - ref) <= bound, what + ": native " + outNative[at] + " vs " + ref + " (bound " + bound + ")");
                                    if (!KernelSupport.gemm(n)) {
                                        assertTrue(Math.abs(outNative[at] - outJava[at]) <= bound, what + ": native " + outNative[at] + " vs Java " + outJava[at]);
                                    }
                                }
                            }
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
        Random rnd = new Random(31);
        // 41 rows go as slices of 16, 16 and 9 rows, the slice from row 5 as 16 and 7: whole and partial 16-row tiles
        // of the VNNI kernels, each row in another lane than in the whole
        int rows = 41;
        for (int bits : BITS) {
            for (int gs : GROUP_SIZES) {
                GgmlType st = SCALE_TYPES[(bits + gs / 32) % SCALE_TYPES.length];
                AffineFormat f = new AffineFormat(bits, gs);
                int cols = gs * 3, groups = rows * cols / gs;
                int[] codes = new int[rows * cols];
                for (int i = 0; i < codes.length; i++) codes[i] = rnd.nextInt(f.maxCode() + 1);
                float[] scales = new float[groups], biases = new float[groups];
                for (int g = 0; g < groups; g++) {
                    scales[g] = (1 + rnd.nextInt(127)) / 4096f;
                    biases[g] = -rnd.nextInt(256) / 64f;
                }
                PackedMatrix m = PackedMatrix.of(tensor(f, st, rows, cols, codes, scales, biases), k);
                assertEquals(Integer.MAX_VALUE, m.invariantTokens(), "native: any token count is invariant");
                for (int n : new int[] {2, 7, 16, 17, 33}) {   // above 16: a prefill, in calls of 16 tokens
                    float[] x = NativeVariants.gaussian(n * cols, rnd);
                    String what = f.typeName() + " " + st + " " + v + " n=" + n;
                    float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(m, x, n, fixture.pool(), what);
                    BatchInvariance.assertSliceEqualsWhole(m, 5, 23, x, n, batch, fixture.pool(), what);
                }
            }
        }
    }

    /**
     * 4 bits, one token (a decode step), whose whole 16-row tiles the VNNI kernel reads row after row, sixteen blocks
     * at a time: rows of 1 … 70 blocks (ending inside a run of sixteen, more than sixteen groups) and of 260 (a second
     * panel of four blocks), 47 and 129 rows (slices of one and two whole tiles and a partial one). With unit scales,
     * integer biases and unit activation scales the result is the exact integer sum; with real ones a token alone is
     * the bits of the same token in a batch (which no one-token path forms), and a slice (other rows in each tile's
     * lanes) the bits of the whole, one token and batches alike.
     */
    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void oneTokenWholeTilesAreExactAndEqualTheBatchBitForBit(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(43);
        int[] groupCounts = {1, 2, 3, 7, 19, 35, -1};   // −1: 8320 columns, 260 blocks (two panels of the VNNI form)
        for (int gs : GROUP_SIZES) {
            for (int shape = 0; shape < groupCounts.length; shape++) {
                GgmlType st = SCALE_TYPES[(shape + gs / 32) % SCALE_TYPES.length];
                AffineFormat f = new AffineFormat(4, gs);
                int cols = groupCounts[shape] < 0 ? 8320 : gs * groupCounts[shape];
                for (int rows : new int[] {47, 129}) {
                    int groups = rows * cols / gs;
                    int[] codes = new int[rows * cols];
                    for (int i = 0; i < codes.length; i++) codes[i] = rnd.nextInt(16);
                    float[] unit = new float[groups], integer = new float[groups], scales = new float[groups], biases = new float[groups];
                    for (int g = 0; g < groups; g++) {
                        unit[g] = 1;
                        integer[g] = -rnd.nextInt(8);
                        scales[g] = (1 + rnd.nextInt(127)) / 4096f;
                        biases[g] = -rnd.nextInt(256) / 64f;
                    }
                    String what = f.typeName() + " " + st + " " + v + " " + rows + "×" + cols;
                    float[] x = unitActivations(rnd, 1, cols);
                    float[] nat = fixture.multiply(PackedMatrix.of(tensor(f, st, rows, cols, codes, unit, integer), k), x, 1);
                    for (int r = 0; r < rows; r++) {
                        long exact = 0;
                        for (int c = 0; c < cols; c++) exact += ((long) codes[r * cols + c] + (long) integer[(r * cols + c) / gs]) * (long) x[c];
                        assertEquals(Float.floatToRawIntBits((float) exact), Float.floatToRawIntBits(nat[r]), what + " row " + r + ": " + nat[r] + " vs exact " + exact);
                    }
                    PackedMatrix m = PackedMatrix.of(tensor(f, st, rows, cols, codes, scales, biases), k);
                    float[] one = NativeVariants.gaussian(cols, rnd);
                    BatchInvariance.assertSliceEqualsWhole(m, 5, 40, one, 1, fixture.multiply(m, one, 1), fixture.pool(), what + " n=1");
                    for (int n : new int[] {2, 3}) {
                        float[] xs = NativeVariants.gaussian(n * cols, rnd);
                        float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(m, xs, n, fixture.pool(), what + " n=" + n);
                        BatchInvariance.assertSliceEqualsWhole(m, 5, 40, xs, n, batch, fixture.pool(), what + " n=" + n);
                    }
                }
            }
        }
    }

    @Test
    void otherWidthsStayOnTheJavaKernels() {
        NativeKernels k = NativeVariants.chosen();
        for (int bits : new int[] {2, 3, 5, 6}) {
            AffineFormat f = new AffineFormat(bits, 64);
            int rows = 3, cols = 64;
            AffineMatrix m = (AffineMatrix) PackedMatrix.of(tensor(f, GgmlType.F16, rows, cols, new int[rows * cols],
                    new float[rows], new float[rows]), k);
            assertEquals("java", m.kernels(), f.typeName());
            assertEquals(KernelSupport.DECODE_MAX_ROWS, m.invariantTokens(), f.typeName());
        }
        for (int bits : BITS) {
            AffineFormat f = new AffineFormat(bits, 64);
            AffineMatrix m = (AffineMatrix) PackedMatrix.of(tensor(f, GgmlType.F16, 3, 64, new int[3 * 64], new float[3], new float[3]), k);
            assertEquals("native " + k.variant().suffix, m.kernels(), f.typeName());
        }
    }
}
