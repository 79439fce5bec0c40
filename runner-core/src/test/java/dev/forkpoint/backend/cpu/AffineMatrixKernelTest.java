package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The MLX affine matrix kernels for every bits × group size × scale type: multiplied for n = 1, 3, 16 (decode) and
 * 40 (prefill) and compared with a float64 product of the weights recomputed here (codes read bit by bit from the
 * packed bytes, s·q + b) and the activations as the kernel sees them: Q8_0-quantised for decode (per 32:
 * d = f16(amax/127), q = rint(x·127/amax)), plain floats for prefill.
 * <p>Bound: |out − ref| ≤ 2e-5 · Σ_c (|s·q|+|b|)·|x_c| + 1e-6: float32 rounding of the per-block and per-group sums
 * (the integer dot products are exact); the magnitude counts s·q and b separately because the kernel sums them
 * separately. Decode batches must equal single-token decode bit for bit.
 */
class AffineMatrixKernelTest {
    private static final int ROWS = 37;
    private static final int[] ALL_BITS = {2, 3, 4, 5, 6, 8};
    private static final int[] ALL_GROUPS = {32, 64, 128};
    private static final GgmlType[] SCALE_TYPES = {GgmlType.F32, GgmlType.F16, GgmlType.BF16};
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

    private static AffineTensor tensor(AffineFormat f, GgmlType st, int rows, int cols, long seed) {
        Random rnd = new Random(seed);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.5 + 0.3 * ((i / cols) % 3 - 1));
        return AffineCodec.quantize(w, rows, cols, f, st).toTensor("model.layers.0.mlp.up_proj", st, Arena.ofAuto());
    }

    /** The weights as the test reads them: codes bit by bit from the bytes, scales and biases from the tensor. */
    private static double[][] weightParts(AffineTensor t) {
        int rows = t.rows(), cols = t.cols(), bits = t.format().bits(), gs = t.format().groupSize();
        double[] sq = new double[rows * cols], b = new double[rows * cols];
        MemorySegment p = t.packed();
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                long bit0 = ((long) r * cols + c) * bits;
                int q = 0;
                for (int k = 0; k < bits; k++) {
                    long i = bit0 + k;
                    q |= ((p.get(ValueLayout.JAVA_BYTE, i >>> 3) >> (i & 7)) & 1) << k;
                }
                sq[r * cols + c] = (double) t.scale(r, c / gs) * q;
                b[r * cols + c] = t.bias(r, c / gs);
            }
        }
        return new double[][] {sq, b};
    }

    private static float[] activations(int n, int cols, long seed) {
        Random rnd = new Random(seed);
        float[] x = new float[n * cols];
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        return x;
    }

    private static void check(AffineFormat f, GgmlType st, int cols) {
        AffineTensor t = tensor(f, st, ROWS, cols, f.bits() * 100 + f.groupSize() + cols + st.ordinal());
        AffineMatrix m = new AffineMatrix(t);
        assertEquals(f.typeName(), m.typeName());
        double[][] parts = weightParts(t);
        String where = f.typeName() + " " + st + " cols=" + cols;
        for (int n : new int[] {1, 3, 16, 40}) {
            float[] x = activations(n, cols, 7 + n);
            float[] out = new float[n * ROWS];
            m.multiply(x, n, out, n == 3 ? pool1 : pool2);
            double[] xe = KernelSupport.gemm(n) ? floats(x) : PackedMatrixKernelTest.effectiveActivations(GgmlType.Q8_0, x);
            for (int tok = 0; tok < n; tok++) {
                for (int r = 0; r < ROWS; r++) {
                    double ref = 0, mag = 0;
                    for (int c = 0; c < cols; c++) {
                        double xv = xe[tok * cols + c], sq = parts[0][r * cols + c], b = parts[1][r * cols + c];
                        ref += (sq + b) * xv;
                        mag += (Math.abs(sq) + Math.abs(b)) * Math.abs(xv);
                    }
                    double got = out[tok * ROWS + r];
                    assertTrue(Math.abs(got - ref) <= 2e-5 * mag + 1e-6,
                            where + " n=" + n + " token " + tok + " row " + r + ": " + got + " vs " + ref + " (magnitude " + mag + ")");
                }
            }
            if (!KernelSupport.gemm(n)) {
                for (int tok = 0; tok < n; tok++) {
                    float[] one = new float[ROWS];
                    float[] xt = new float[cols];
                    System.arraycopy(x, tok * cols, xt, 0, cols);
                    m.multiply(xt, 1, one, tok % 2 == 0 ? pool1 : pool2);
                    for (int r = 0; r < ROWS; r++) {
                        assertEquals(Float.floatToIntBits(one[r]), Float.floatToIntBits(out[tok * ROWS + r]),
                                where + " n=" + n + " token " + tok + " row " + r + ": batched differs from single-token decode");
                    }
                }
            }
        }
    }

    private static double[] floats(float[] x) {
        double[] d = new double[x.length];
        for (int i = 0; i < x.length; i++) d[i] = x[i];
        return d;
    }

    @Test
    void everyFormatAndScaleTypeMatchesFloat64Reference() {
        for (int bits : ALL_BITS) {
            for (int gs : ALL_GROUPS) {
                for (GgmlType st : SCALE_TYPES) {
                    AffineFormat f = new AffineFormat(bits, gs);
                    check(f, st, 256);
                    // an odd number of 32-element blocks (the kernels' tail) and several groups of odd count
                    check(f, st, gs == 32 ? 96 : gs == 64 ? 320 : 384);
                }
            }
        }
    }

    @Test
    void dequantizeRowMatchesTheIndependentReading() {
        for (int bits : ALL_BITS) for (GgmlType scaleType : new GgmlType[]{GgmlType.BF16, GgmlType.F16, GgmlType.F32}) {
            AffineTensor t = tensor(new AffineFormat(bits, bits == 4 ? 32 : 64), scaleType, 5, 192, bits);
            AffineMatrix m = new AffineMatrix(t);
            double[][] parts = weightParts(t);
            float[] row = new float[192 + 3];
            for (int r = 0; r < 5; r++) {
                m.dequantizeRow(r, row, 3);
                for (int c = 0; c < 192; c++) {
                    float expected = (float) parts[0][r * 192 + c] + (float) parts[1][r * 192 + c];
                    assertEquals(expected, row[3 + c], bits + " bits row " + r + " col " + c);
                }
            }
            assertThrows(IndexOutOfBoundsException.class, () -> m.dequantizeRow(5, new float[192], 0));
            assertThrows(IndexOutOfBoundsException.class, () -> m.dequantizeRow(0, new float[191], 0));
            assertThrows(IllegalArgumentException.class, () -> m.multiply(new float[191], 1, new float[5], pool1));
        }
    }

    @Test
    void backendWeightMultipliesAndEmbeds() {
        AffineTensor t = tensor(new AffineFormat(4, 64), GgmlType.F16, ROWS, 128, 3);
        try (CpuBackend backend = new CpuBackend(2)) {
            Weight w = backend.weight(t);
            assertEquals("affine 4-bit g64", w.typeName());
            assertEquals("model.layers.0.mlp.up_proj", w.name());
            assertEquals(ROWS, w.rows());
            assertEquals(128, w.cols());
            Activation e = backend.ops().embed(w, new int[] {36, 0, 5});
            float[] expected = new float[128];
            for (int i = 0; i < 3; i++) {
                AffineCodec.dequantizeRow(t, new int[] {36, 0, 5}[i], expected, 0);
                for (int c = 0; c < 128; c++) assertEquals(expected[c], ((CpuActivation) e).data()[i * 128 + c]);
            }
            float[] x = activations(1, 128, 11);
            float[] direct = new float[ROWS];
            new AffineMatrix(t).multiply(x, 1, direct, pool2);
            Activation y = backend.ops().matmul(new CpuActivation(x, 1, 128), w);
            assertArrayEquals(direct, ((CpuActivation) y).data());
        }
    }
}
