package dev.forkpoint.backend.cpu;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Every supported type: seeded random weights quantised with {@link Quantization}, multiplied by the kernels for
 * n = 1 (decode), 7 and 33 (prefill, with token remainders), and compared with a float64 product of the
 * dequantised weights and the activations as the kernel sees them: quantised here to Q8_0 (Q8_0, Q4_0 weights) or
 * Q8_K (Q4_K, Q6_K) by the llama.cpp definitions written out in this test, plain floats otherwise.
 * <p>Bound: |out − ref| ≤ 2e-5 · Σ_c |W[r][c]·x[c]| + 1e-6, i.e. float32 accumulation error over a few hundred
 * terms (the products of the quantised values are exact in the integer paths; only the float sums round).
 */
class PackedMatrixKernelTest {
    private static final int ROWS = 37; // not a multiple of the 4-row tiles or of the row granule
    private static WorkerPool pool1, pool2;

    @BeforeAll
    static void pools() {
        pool1 = new WorkerPool(1);
        pool2 = new WorkerPool(2);
    }

    @AfterAll
    static void close() {
        pool1.close();
        pool2.close();
    }

    private static PackedMatrix matrix(GgmlType type, int rows, int cols, long seed) {
        Random rnd = new Random(seed);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.5);
        MemorySegment seg = Arena.ofAuto().allocate(type.bytesFor(w.length));
        Quantization.quantize(type, w, 0, w.length, seg, 0);
        return PackedMatrix.of(new GgmlTensor("blk.0.test.weight", type, new long[] {cols, rows}, seg));
    }

    /** x as the kernel multiplies it: Q8_0 (per 32: d = f16(amax/127), q = rint(x·127/amax)) or Q8_K or as is. */
    static double[] effectiveActivations(GgmlType type, float[] x) {
        double[] e = new double[x.length];
        switch (type) {
            case Q8_0, Q4_0 -> {
                for (int b = 0; b < x.length / 32; b++) {
                    float amax = 0;
                    for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
                    float d = Float.float16ToFloat(Float.floatToFloat16(amax / 127f));
                    float id = amax == 0 ? 0 : 127f / amax;
                    for (int j = 0; j < 32; j++) e[b * 32 + j] = Math.rint(x[b * 32 + j] * id) * (double) d;
                }
            }
            case Q4_K, Q6_K -> {
                for (int b = 0; b < x.length / 256; b++) {
                    float amax = 0, max = 0;
                    for (int j = 0; j < 256; j++) {
                        if (Math.abs(x[b * 256 + j]) > amax) {
                            amax = Math.abs(x[b * 256 + j]);
                            max = x[b * 256 + j];
                        }
                    }
                    if (amax == 0) continue;
                    float iscale = -127f / max;
                    float d = 1 / iscale;
                    for (int j = 0; j < 256; j++) e[b * 256 + j] = Math.min(127, Math.rint(iscale * x[b * 256 + j])) * (double) d;
                }
            }
            default -> {
                for (int i = 0; i < x.length; i++) e[i] = x[i];
            }
        }
        return e;
    }

    private static void check(GgmlType type, int cols, int n, WorkerPool pool) {
        PackedMatrix m = matrix(type, ROWS, cols, 1000 + type.ordinal() * 31L + cols);
        assertEquals(type.name(), m.typeName());
        assertEquals(ROWS, m.rows());
        assertEquals(cols, m.cols());
        Random rnd = new Random(7 + n);
        float[] x = new float[n * cols];
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        float[] out = new float[n * ROWS];
        m.multiply(x, n, out, pool);

        float[] w = new float[ROWS * cols];
        Quantization.dequantize(type, extract(m, type, cols), 0, w, 0, w.length);
        double[] xe = effectiveActivations(type, x);
        for (int t = 0; t < n; t++) {
            for (int r = 0; r < ROWS; r++) {
                double ref = 0, mag = 0;
                for (int c = 0; c < cols; c++) {
                    double p = (double) w[r * cols + c] * xe[t * cols + c];
                    ref += p;
                    mag += Math.abs(p);
                }
                double got = out[t * ROWS + r];
                assertTrue(Math.abs(got - ref) <= 2e-5 * mag + 1e-6,
                        type + " cols=" + cols + " n=" + n + " token " + t + " row " + r + ": " + got + " vs " + ref + " (Σ|w·x| " + mag + ")");
            }
        }
    }

    /** The packed bytes behind a matrix made by {@link #matrix}: re-created from the same seed. */
    private static MemorySegment extract(PackedMatrix m, GgmlType type, int cols) {
        Random rnd = new Random(1000 + type.ordinal() * 31L + cols);
        float[] w = new float[m.rows() * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.5);
        MemorySegment seg = Arena.ofAuto().allocate(type.bytesFor(w.length));
        Quantization.quantize(type, w, 0, w.length, seg, 0);
        return seg;
    }

    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"})
    void multiplyMatchesFloat64Reference(GgmlType type) {
        int[] colsList = type.blockSize() == 1 ? new int[] {512, 200} : new int[] {512};
        for (int cols : colsList) {
            for (int n : new int[] {1, 2, 7, 33}) {
                check(type, cols, n, pool2);
                if (n != 2) check(type, cols, n, pool1);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"})
    void dequantizeRowMatchesQuantization(GgmlType type) {
        int cols = 768;
        PackedMatrix m = matrix(type, 5, cols, 99);
        Random rnd = new Random(99);
        float[] w = new float[5 * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.5);
        MemorySegment seg = Arena.ofAuto().allocate(type.bytesFor(w.length));
        Quantization.quantize(type, w, 0, w.length, seg, 0);
        float[] all = new float[w.length];
        Quantization.dequantize(type, seg, 0, all, 0, all.length);
        for (int r = 0; r < 5; r++) {
            float[] row = new float[cols + 3];
            m.dequantizeRow(r, row, 3);
            for (int c = 0; c < cols; c++) assertEquals(all[r * cols + c], row[3 + c], type + " row " + r + " col " + c);
        }
    }

    @Test
    void f16SpecialValuesDecodeExactly() {
        short[] halves = {0x0000, (short) 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, (short) 0xc000, 0x7bff, 0x7c00, (short) 0xfc00, 0x7e00, 0x3555,
                0x1234, (short) 0x9876, 0x0200, 0x5a5a};
        MemorySegment seg = Arena.ofAuto().allocate(32);
        for (int i = 0; i < 16; i++) seg.set(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, 2L * i, halves[i]);
        PackedMatrix m = PackedMatrix.of(new GgmlTensor("h", GgmlType.F16, new long[] {16, 1}, seg));
        float[] row = new float[16];
        m.dequantizeRow(0, row, 0);
        for (int i = 0; i < 16; i++) {
            float expected = Float.float16ToFloat(halves[i]);
            assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(row[i]), "half 0x" + Integer.toHexString(halves[i] & 0xffff));
        }
    }

    @Test
    void unsupportedTypeNamesTensorAndSupportedTypes() {
        MemorySegment seg = Arena.ofAuto().allocate(GgmlType.Q5_K.bytesFor(256));
        var e = assertThrows(InvalidInputException.class,
                () -> PackedMatrix.of(new GgmlTensor("blk.3.ffn_up.weight", GgmlType.Q5_K, new long[] {256, 1}, seg)));
        assertTrue(e.getMessage().contains("blk.3.ffn_up.weight") && e.getMessage().contains("Q5_K")
                && e.getMessage().contains(GgmlType.supportedNames()), e.getMessage());
    }

    @Test
    void badShapesAndBuffersAreRejected() {
        MemorySegment seg = Arena.ofAuto().allocate(GgmlType.Q8_0.bytesFor(64));
        var partial = assertThrows(InvalidInputException.class,
                () -> PackedMatrix.of(new GgmlTensor("t.partial", GgmlType.Q8_0, new long[] {48, 1}, seg)));
        assertTrue(partial.getMessage().contains("t.partial"), partial.getMessage());
        assertThrows(InvalidInputException.class,
                () -> PackedMatrix.of(new GgmlTensor("t", GgmlType.Q8_0, new long[] {64, 2}, seg)));
        PackedMatrix m = PackedMatrix.of(new GgmlTensor("t", GgmlType.Q8_0, new long[] {64, 1}, seg));
        assertThrows(IllegalArgumentException.class, () -> m.multiply(new float[63], 1, new float[1], pool1));
        assertThrows(IllegalArgumentException.class, () -> m.multiply(new float[128], 2, new float[1], pool1));
        assertThrows(IndexOutOfBoundsException.class, () -> m.dequantizeRow(1, new float[64], 0));
    }
}
