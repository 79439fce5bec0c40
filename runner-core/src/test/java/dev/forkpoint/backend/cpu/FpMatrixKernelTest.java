package dev.forkpoint.backend.cpu;

import dev.forkpoint.MlxQuantVectors;
import dev.forkpoint.tensor.FpCodec;
import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The CPU kernels of MLX's mxfp4, nvfp4 and mxfp8 matrices ({@link FpMatrix}) against MLX 0.31.2's own output
 * ({@link MlxQuantVectors}) and a float64 product of the dequantised weights:
 * <ul>
 * <li>{@code dequantizeRow} (what prefill and embeddings read) reproduces MLX's {@code dequantize} bit for bit, and
 * the reference dequantiser on seeded matrices with awkward groups and special scale bytes;</li>
 * <li>decode (n ≤ 16, float activations) and prefill (n = 40, the float GEMM) agree with float64 to float rounding:
 * |out − Σ w·x| ≤ cols · 2^−24 · Σ |w·x|, the worst case of summing cols float products in any order; MLX's own
 * quantized_matmul ({@code x_matmul_wT}, float32 too) must lie within the same bound of float64, so ours within twice
 * it of MLX's;</li>
 * <li>a decode batch of n rows equals each row alone, bit for bit, with one and two threads.</li>
 * </ul>
 */
class FpMatrixKernelTest {
    private static MlxQuantVectors mlx;
    private static WorkerPool pool1, pool2;

    @BeforeAll
    static void setUp() {
        mlx = MlxQuantVectors.load();
        pool1 = new WorkerPool(1);
        pool2 = new WorkerPool(2);
    }

    @AfterAll
    static void close() {
        pool1.close();
        pool2.close();
    }

    private static void assertSameBits(float expected, float actual, String where) {
        if (Float.isNaN(expected) && Float.isNaN(actual)) return;
        assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(actual), where + ": " + expected + " vs " + actual);
    }

    @ParameterizedTest
    @EnumSource(FpFormat.class)
    void dequantizedRowsAreMlxsBitForBit(FpFormat f) {
        FpMatrix m = new FpMatrix(mlx.tensor(f, Arena.ofAuto()));
        float[] expected = mlx.floats(f.typeName() + ".dequantized");
        int cols = m.cols();
        float[] row = new float[cols + 5];
        for (int r = 0; r < m.rows(); r++) {
            m.dequantizeRow(r, row, 5);
            for (int c = 0; c < cols; c++) assertSameBits(expected[r * cols + c], row[5 + c], f + " row " + r + " col " + c);
        }
    }

    /** Σ_c w[r][c]·x[t][c] in float64, and Σ |w·x| for the bound. */
    private static double[][] reference(float[] w, int rows, int cols, float[] x, int n) {
        double[] dot = new double[n * rows], abs = new double[n * rows];
        for (int t = 0; t < n; t++) {
            for (int r = 0; r < rows; r++) {
                double s = 0, a = 0;
                for (int c = 0; c < cols; c++) {
                    double p = (double) w[r * cols + c] * x[t * cols + c];
                    s += p;
                    a += Math.abs(p);
                }
                dot[t * rows + r] = s;
                abs[t * rows + r] = a;
            }
        }
        return new double[][]{dot, abs};
    }

    private static double checkWithin(float[] out, double[][] ref, int cols, double factor, String what) {
        double worst = 0;
        for (int i = 0; i < ref[0].length; i++) {
            double err = Math.abs(out[i] - ref[0][i]), bound = factor * cols * 0x1p-24 * ref[1][i];
            assertTrue(err <= bound, what + " output " + i + ": " + out[i] + " vs " + ref[0][i] + " (error " + err + " > bound " + bound + ")");
            if (ref[1][i] > 0) worst = Math.max(worst, err / ref[1][i]);
        }
        return worst;
    }

    @ParameterizedTest
    @EnumSource(FpFormat.class)
    void decodeAndPrefillAgreeWithMlxAndFloat64(FpFormat f) {
        FpMatrix m = new FpMatrix(mlx.tensor(f, Arena.ofAuto()));
        int rows = m.rows(), cols = m.cols();
        float[] w = mlx.floats(f.typeName() + ".dequantized");
        float[] x = mlx.floats("x");
        int n = x.length / cols;
        double[][] ref = reference(w, rows, cols, x, n);
        float[] mlxOut = mlx.floats(f.typeName() + ".x_matmul_wT");
        double mlxErr = checkWithin(mlxOut, ref, cols, 1, "MLX's own " + f);
        for (WorkerPool pool : new WorkerPool[]{pool1, pool2}) {
            float[] out = new float[n * rows];
            m.multiply(x, n, out, pool);
            double ourErr = checkWithin(out, ref, cols, 1, f + " decode vs float64");
            double[][] mlxRef = {toDoubles(mlxOut), ref[1]};
            checkWithin(out, mlxRef, cols, 2, f + " decode vs MLX");
            System.out.printf("FpMatrixKernelTest %s decode: error / Σ|w·x| %.2e (MLX's %.2e)%n", f, ourErr, mlxErr);
        }
        // prefill: 40 tokens through the float GEMM
        Random rnd = new Random(11);
        int np = 40;
        float[] xp = new float[np * cols];
        for (int i = 0; i < xp.length; i++) xp[i] = (float) rnd.nextGaussian();
        float[] out = new float[np * rows];
        m.multiply(xp, np, out, pool2);
        checkWithin(out, reference(w, rows, cols, xp, np), cols, 1, f + " prefill vs float64");
    }

    private static double[] toDoubles(float[] v) {
        double[] d = new double[v.length];
        for (int i = 0; i < v.length; i++) d[i] = v[i];
        return d;
    }

    /** Seeded rows with awkward groups: zeros, negative zeros, a constant, tiny values (e4m3 subnormals), huge range. */
    private static float[] awkward(int rows, int cols, long seed) {
        Random rnd = new Random(seed);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * Math.scalb(1.0, (i / cols) % 9 - 4));
        for (int i = 0; i < 32; i++) {
            w[i] = 0f;
            w[32 + i] = -0f;
            w[64 + i] = 0.123f;
            w[96 + i] = i == 0 ? 300f : (float) (rnd.nextGaussian() * 1e-3);
            w[128 + i] = (float) (rnd.nextGaussian() * 1e-30);
        }
        return w;
    }

    @Test
    void seededMatricesMatchTheReferenceDequantiserAndFloat64() {
        Random rnd = new Random(2);
        for (FpFormat f : FpFormat.values()) {
            for (int cols : f == FpFormat.NVFP4 ? new int[]{176, 1040} : new int[]{192, 1056}) {
                int rows = 37;
                FpTensor t = FpCodec.quantize(awkward(rows, cols, cols + f.ordinal()), rows, cols, f).toTensor("blk.0.ffn_down.weight", Arena.ofAuto());
                FpMatrix m = new FpMatrix(t);
                float[] w = new float[rows * cols], row = new float[cols];
                for (int r = 0; r < rows; r++) {
                    FpCodec.dequantizeRow(t, r, w, r * cols);
                    m.dequantizeRow(r, row, 0);
                    for (int c = 0; c < cols; c++) assertSameBits(w[r * cols + c], row[c], f + " " + cols + " row " + r + " col " + c);
                }
                for (int n : new int[]{1, 5, 16, 17}) {
                    float[] x = new float[n * cols];
                    for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
                    float[] out = new float[n * rows];
                    m.multiply(x, n, out, pool2);
                    checkWithin(out, reference(w, rows, cols, x, n), cols, 1, f + " " + cols + " cols, n = " + n);
                }
            }
        }
    }

    @Test
    void specialScaleBytesDequantiseLikeTheReference() {
        // every scale byte value (0 … 255) once, over random codes: ∞ and NaN from byte 255, subnormals from 0 and 1
        for (FpFormat f : FpFormat.values()) {
            int rows = 4, cols = 64 * f.groupSize();
            Random rnd = new Random(f.ordinal());
            Arena arena = Arena.ofAuto();
            var packed = arena.allocate((long) rows * cols * f.bits() / 8, 8);
            for (long i = 0; i < packed.byteSize(); i++) packed.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(256));
            var scales = arena.allocate((long) rows * cols / f.groupSize());
            for (long i = 0; i < scales.byteSize(); i++) scales.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            FpTensor t = new FpTensor("token_embd.weight", rows, cols, f, packed, scales);
            FpMatrix m = new FpMatrix(t);
            float[] a = new float[cols], b = new float[cols];
            for (int r = 0; r < rows; r++) {
                FpCodec.dequantizeRow(t, r, a, 0);
                m.dequantizeRow(r, b, 0);
                for (int c = 0; c < cols; c++) {
                    assertSameBits(a[c], b[c], f + " row " + r + " col " + c);
                    assertSameBits(f.element().value(t.code(r, c)) * t.scale(r, c / f.groupSize()), b[c], f + " row " + r + " col " + c);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(FpFormat.class)
    void decodeBatchesEqualSingleRowsBitForBit(FpFormat f) {
        int rows = 37, cols = f == FpFormat.NVFP4 ? 528 : 512;
        Random rnd = new Random(9);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) rnd.nextGaussian();
        FpMatrix m = new FpMatrix(FpCodec.quantize(w, rows, cols, f).toTensor("blk.1.attn_q.weight", Arena.ofAuto()));
        int n = KernelSupport.DECODE_MAX_ROWS;
        float[] x = new float[n * cols];
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        float[] batch = new float[n * rows], batch1 = new float[n * rows];
        m.multiply(x, n, batch, pool2);
        m.multiply(x, n, batch1, pool1);
        assertArrayEquals(batch, batch1, "one thread vs two");
        for (int t = 0; t < n; t++) {
            float[] one = new float[rows];
            m.multiply(java.util.Arrays.copyOfRange(x, t * cols, (t + 1) * cols), 1, one, pool2);
            for (int r = 0; r < rows; r++) assertSameBits(one[r], batch[t * rows + r], f + " token " + t + " row " + r);
        }
        for (int k = 2; k < n; k += 5) {   // and every batch size
            float[] part = new float[k * rows];
            m.multiply(x, k, part, pool2);
            for (int i = 0; i < part.length; i++) assertSameBits(batch[i], part[i], f + " batch of " + k + ", output " + i);
        }
    }
}
