package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The native float kernels ({@code native/cpu/forkpoint_float.c}: F32, F16, BF16 weights times float activations)
 * against the Java kernels and a double reference, for every instruction-set variant this machine runs (the others
 * are skipped with a line).
 * <ul>
 * <li>Conversion: every finite F16 and BF16 code, multiplied by one-hot activations, comes out as exactly its value
 * (the other products are zeros, so the sum is that one product, exact).</li>
 * <li>With small integer weights and activations every partial sum is an integer below 2^24, exact in float: native,
 * Java and the exact sum are the same bits (decode and prefill).</li>
 * <li>With Gaussian values, ragged shapes (cols 1 … 1000, not multiples of the vector width; rows 1 … 129, not
 * multiples of the tile) and 1 … 70 tokens, native stays within B = (⌈cols/4⌉ + 17)·2⁻²⁴·G of the double reference
 * Σ w·x (G = Σ |w·x|) and within 2B of the Java kernels. Derivation: a sum of k terms added in sequence in float errs
 * by at most γ_k·G ≈ k·2⁻²⁴·G; native adds ⌈cols/W⌉ terms per lane (W ≥ 4) then log2 W ≤ 4 tree levels (+1 for the
 * portable variant's rounded product); the Java decode kernel ⌈cols/2L⌉ per lane, 1 + log2 L levels and up to L − 1
 * tail terms (L ≤ 16); the Java prefill GEMM ⌈cols/L⌉ per lane, log2 L levels and the tail; each k ≤ ⌈cols/4⌉ + 16,
 * and 17 covers γ_k's 1/(1 − k·2⁻²⁴).</li>
 * <li>A batch (16 decode tokens, prefills of 17 … 130, over several calls of 64) equals its tokens run alone, and a
 * slice of rows the same rows of the whole, bit for bit.</li>
 * </ul>
 */
class NativeFloatKernelTest {
    private static final GgmlType[] TYPES = {GgmlType.F32, GgmlType.F16, GgmlType.BF16};
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    @RegisterExtension
    static final NativeVariants.Fixture fixture = new NativeVariants.Fixture();

    /** A rows × cols matrix of {@code type} holding {@code values} rounded to it (off-heap, as a mapped file is); returns the stored values in place. */
    private static GgmlTensor tensor(GgmlType type, int rows, int cols, float[] values) {
        int bytes = type == GgmlType.F32 ? 4 : 2;
        MemorySegment seg = Arena.ofAuto().allocate((long) rows * cols * bytes, 64);
        for (int i = 0; i < values.length; i++) {
            switch (type) {
                case F32 -> seg.setAtIndex(F32, i, values[i]);
                case F16 -> seg.setAtIndex(I16, i, Float.floatToFloat16(values[i]));
                case BF16 -> seg.setAtIndex(I16, i, (short) (Float.floatToRawIntBits(values[i]) >>> 16));
                default -> throw new IllegalArgumentException(type.name());
            }
            values[i] = stored(type, seg, i);
        }
        return new GgmlTensor("blk.0.ffn_up.weight", type, new long[] {cols, rows}, seg);
    }

    private static float stored(GgmlType type, MemorySegment seg, long i) {
        return switch (type) {
            case F32 -> seg.getAtIndex(F32, i);
            case F16 -> Float.float16ToFloat(seg.getAtIndex(I16, i));
            default -> Float.intBitsToFloat((seg.getAtIndex(I16, i) & 0xffff) << 16);
        };
    }

    private static PackedMatrix matrix(GgmlTensor t, NativeKernels k) {
        return PackedMatrix.of(t, k);
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void everyFiniteHalfAndBfloatCodeConvertsExactly(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        int rows = 64, cols = 1024;   // 65,536 codes: code r·cols + c at row r, column c
        float[] x = new float[cols * cols];
        for (int c = 0; c < cols; c++) x[c * cols + c] = 1;   // token c is one-hot at column c
        for (GgmlType type : new GgmlType[] {GgmlType.F16, GgmlType.BF16}) {
            MemorySegment seg = Arena.ofAuto().allocate((long) rows * cols * 2, 64);
            float[] expected = new float[rows * cols];
            for (int code = 0; code < rows * cols; code++) {
                float value = type == GgmlType.F16 ? Float.float16ToFloat((short) code) : Float.intBitsToFloat(code << 16);
                boolean finite = Float.isFinite(value);
                seg.setAtIndex(I16, code, finite ? (short) code : 0);
                expected[code] = finite && value != 0 ? value : 0f;   // a zero weight sums to +0
            }
            PackedMatrix m = matrix(new GgmlTensor("blk.0.attn_q.weight", type, new long[] {cols, rows}, seg), k);
            float[] out = new float[cols * rows];
            m.multiply(x, cols, out, fixture.pool());
            for (int r = 0; r < rows; r++) {
                for (int c = 0; c < cols; c++) {
                    int code = r * cols + c;
                    float got = out[c * rows + r];
                    if (Float.floatToRawIntBits(expected[code]) != Float.floatToRawIntBits(got)) {
                        fail(type + " " + v + " code 0x" + Integer.toHexString(code) + ": " + got + " vs " + expected[code]);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void integerValuesGiveTheExactSumOnNativeAndJava(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(3);
        for (GgmlType type : TYPES) {
            for (int cols : new int[] {5, 16, 33, 300}) {
                int rows = 11;
                float[] w = new float[rows * cols];
                for (int i = 0; i < w.length; i++) w[i] = rnd.nextInt(17) - 8;
                GgmlTensor t = tensor(type, rows, cols, w);
                for (int n : new int[] {1, 3, 16, 17, 40}) {
                    float[] x = new float[n * cols];
                    for (int i = 0; i < x.length; i++) x[i] = rnd.nextInt(17) - 8;
                    float[] java = fixture.multiply(matrix(t, null), x, n), nat = fixture.multiply(matrix(t, k), x, n);
                    for (int tok = 0; tok < n; tok++) {
                        for (int r = 0; r < rows; r++) {
                            long exact = 0;
                            for (int c = 0; c < cols; c++) exact += (long) w[r * cols + c] * (long) x[tok * cols + c];
                            int at = tok * rows + r;
                            String what = type + " " + v + " cols " + cols + " n=" + n + " token " + tok + " row " + r;
                            NativeVariants.assertExactSum(exact, java[at], nat[at], what);
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void gaussianValuesAreWithinFloatRoundingOfDoubleAndOfTheJavaKernels(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(23);
        int[] rowCounts = {1, 3, 5, 37, 129};
        int[] colCounts = {1, 7, 15, 16, 17, 33, 100, 257, 1000};
        double worst = 0;
        for (GgmlType type : TYPES) {
            for (int s = 0; s < colCounts.length; s++) {
                int rows = rowCounts[(s + type.ordinal()) % rowCounts.length], cols = colCounts[s];
                float[] w = new float[rows * cols];
                for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.05);
                GgmlTensor t = tensor(type, rows, cols, w);
                PackedMatrix java = matrix(t, null), nat = matrix(t, k);
                for (int n : new int[] {1, 2, 5, 16, 17, 70}) {
                    float[] x = NativeVariants.gaussian(n * cols, rnd);
                    float[] outJava = fixture.multiply(java, x, n), outNative = fixture.multiply(nat, x, n);
                    for (int tok = 0; tok < n; tok++) {
                        for (int r = 0; r < rows; r++) {
                            double ref = 0, g = 0;
                            for (int c = 0; c < cols; c++) {
                                double p = (double) w[r * cols + c] * x[tok * cols + c];
                                ref += p;
                                g += Math.abs(p);
                            }
                            double bound = ((cols + 3) / 4 + 17) * 0x1p-24 * g;
                            int at = tok * rows + r;
                            String what = type + " " + v + " " + rows + "×" + cols + " n=" + n + " token " + tok + " row " + r;
                            double e = Math.abs(outNative[at] - ref);
                            assertTrue(e <= bound, what + ": native " + outNative[at] + " vs " + ref + " (bound " + bound + ")");
                            assertTrue(Math.abs(outNative[at] - outJava[at]) <= 2 * bound, what + ": native " + outNative[at] + " vs Java " + outJava[at]);
                            if (bound > 0) worst = Math.max(worst, e / bound);
                        }
                    }
                }
            }
        }
        System.err.printf("NativeFloatKernelTest %s: largest error against double %.4f of the bound%n", v, worst);
    }

    @ParameterizedTest
    @EnumSource(NativeKernels.Variant.class)
    void batchesPrefillsAndSlicesEqualTheirRowsAloneBitForBit(NativeKernels.Variant v) {
        NativeKernels k = fixture.kernels(v);
        Random rnd = new Random(41);
        int rows = 41;
        for (GgmlType type : TYPES) {
            for (int cols : new int[] {67, 300, 1100}) {   // 1100: three column chunks of the prefill GEMM
                float[] w = new float[rows * cols];
                for (int i = 0; i < w.length; i++) w[i] = (float) rnd.nextGaussian();
                PackedMatrix m = matrix(tensor(type, rows, cols, w), k);
                assertEquals(Integer.MAX_VALUE, m.invariantTokens(), "native: any token count is invariant");
                for (int n : new int[] {2, 7, 16, 17, 33, 130}) {   // 130: three calls of at most 64 tokens
                    float[] x = NativeVariants.gaussian(n * cols, rnd);
                    String what = type + " " + v + " cols " + cols + " n=" + n;
                    float[] batch = BatchInvariance.assertBatchEqualsTokensAlone(m, x, n, fixture.pool(), what);
                    BatchInvariance.assertSliceEqualsWhole(m, 5, 23, x, n, batch, fixture.pool(), what);
                }
            }
        }
    }

    @Test
    void kernelChoiceSelectsNativeOrJava() {
        NativeKernels k = NativeVariants.chosen();
        for (GgmlType type : TYPES) {
            GgmlTensor t = tensor(type, 3, 8, new float[24]);
            assertEquals("native " + k.variant().suffix, kernels(PackedMatrix.of(t, KernelChoice.NATIVE)), type.name());
            PackedMatrix java = PackedMatrix.of(t, KernelChoice.JAVA);
            assertEquals("java", kernels(java), type.name());
            assertEquals(KernelSupport.DECODE_MAX_ROWS, java.invariantTokens(), type.name());
        }
    }

    private static String kernels(PackedMatrix m) {
        return switch (m) {
            case F32Matrix f -> f.kernels();
            case F16Matrix f -> f.kernels();
            case BF16Matrix f -> f.kernels();
            default -> throw new AssertionError(m.typeName());
        };
    }
}
