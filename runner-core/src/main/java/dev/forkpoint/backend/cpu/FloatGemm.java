package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * The matrix–matrix product shared by every type for prefill. Each worker decodes four weight rows at a time into a
 * small float scratch (via {@link PackedMatrix#dequantizeRow}, never the whole tensor) and multiplies them with groups
 * of four activation rows in a 4×4 register tile of FMA accumulators: every weight value decoded is reused by all the
 * tokens of a token block, every activation load by four rows. The columns are walked in chunks of {@link #K_CHUNK}
 * so that the weight chunk stays in L1 while the token groups stream past it; the lane-wise partial sums are kept
 * in a per-worker scratch between chunks and reduced once at the end.
 */
final class FloatGemm {
    private FloatGemm() {}

    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final int R = 4;
    private static final int TOKEN_BLOCK = 32;
    private static final int K_CHUNK = 512;

    /**
     * out[t·rowCount + r] = Σ_c W[firstRow + r][c] · x[t·cols + c] for r &lt; rowCount, with W read through
     * {@code m.dequantizeRow} (only the range's rows). A row's sums depend on n and the columns only (the token
     * blocks, the column chunks and the lane-wise accumulation are the same for each of the four rows of a tile, and
     * padding rows are zeros of their own), so any row range gives the same bits as those rows of the whole matrix.
     */
    static void multiply(PackedMatrix m, int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool) {
        int rows = rowCount, cols = m.cols();
        int vecCols = cols / L * L;
        pool.runRanges(rows, pool.threads() * 4, R, (from, to) -> {
            float[] w = new float[R * cols];
            float[] acc = new float[TOKEN_BLOCK * R * L];
            for (int t0 = 0; t0 < n; t0 += TOKEN_BLOCK) {
                int t1 = Math.min(n, t0 + TOKEN_BLOCK);
                for (int r0 = from; r0 < to; r0 += R) {
                    int nr = Math.min(R, to - r0);
                    for (int i = 0; i < nr; i++) m.dequantizeRow(firstRow + r0 + i, w, i * cols);
                    if (nr < R) Arrays.fill(w, nr * cols, R * cols, 0f);
                    Arrays.fill(acc, 0f);
                    for (int k0 = 0; k0 < vecCols; k0 += K_CHUNK) {
                        int k1 = Math.min(vecCols, k0 + K_CHUNK);
                        int t = t0;
                        for (; t + 4 <= t1; t += 4) tile4x4(w, cols, x, t, k0, k1, acc, (t - t0) * R * L);
                        for (; t < t1; t++) tile4x1(w, cols, x, t, k0, k1, acc, (t - t0) * R * L);
                    }
                    for (int t = t0; t < t1; t++) {
                        int a = (t - t0) * R * L;
                        for (int i = 0; i < nr; i++) {
                            float s = KernelSupport.sum(FloatVector.fromArray(F, acc, a + i * L));
                            for (int c = vecCols; c < cols; c++) s += w[i * cols + c] * x[t * cols + c];
                            out[t * rows + r0 + i] = s;
                        }
                    }
                }
            }
        });
    }

    /** acc[a + (4j + i)·L …] (token t+j, row i), L lanes each, += lane-wise products over columns [k0, k1). */
    private static void tile4x4(float[] w, int cols, float[] x, int t, int k0, int k1, float[] acc, int a) {
        FloatVector a00 = FloatVector.fromArray(F, acc, a), a10 = FloatVector.fromArray(F, acc, a + L);
        FloatVector a20 = FloatVector.fromArray(F, acc, a + 2 * L), a30 = FloatVector.fromArray(F, acc, a + 3 * L);
        FloatVector a01 = FloatVector.fromArray(F, acc, a + 4 * L), a11 = FloatVector.fromArray(F, acc, a + 5 * L);
        FloatVector a21 = FloatVector.fromArray(F, acc, a + 6 * L), a31 = FloatVector.fromArray(F, acc, a + 7 * L);
        FloatVector a02 = FloatVector.fromArray(F, acc, a + 8 * L), a12 = FloatVector.fromArray(F, acc, a + 9 * L);
        FloatVector a22 = FloatVector.fromArray(F, acc, a + 10 * L), a32 = FloatVector.fromArray(F, acc, a + 11 * L);
        FloatVector a03 = FloatVector.fromArray(F, acc, a + 12 * L), a13 = FloatVector.fromArray(F, acc, a + 13 * L);
        FloatVector a23 = FloatVector.fromArray(F, acc, a + 14 * L), a33 = FloatVector.fromArray(F, acc, a + 15 * L);
        int x0 = t * cols, x1 = x0 + cols, x2 = x1 + cols, x3 = x2 + cols;
        for (int c = k0; c < k1; c += L) {
            FloatVector w0 = FloatVector.fromArray(F, w, c);
            FloatVector w1 = FloatVector.fromArray(F, w, cols + c);
            FloatVector w2 = FloatVector.fromArray(F, w, 2 * cols + c);
            FloatVector w3 = FloatVector.fromArray(F, w, 3 * cols + c);
            FloatVector v = FloatVector.fromArray(F, x, x0 + c);
            a00 = w0.fma(v, a00); a10 = w1.fma(v, a10); a20 = w2.fma(v, a20); a30 = w3.fma(v, a30);
            v = FloatVector.fromArray(F, x, x1 + c);
            a01 = w0.fma(v, a01); a11 = w1.fma(v, a11); a21 = w2.fma(v, a21); a31 = w3.fma(v, a31);
            v = FloatVector.fromArray(F, x, x2 + c);
            a02 = w0.fma(v, a02); a12 = w1.fma(v, a12); a22 = w2.fma(v, a22); a32 = w3.fma(v, a32);
            v = FloatVector.fromArray(F, x, x3 + c);
            a03 = w0.fma(v, a03); a13 = w1.fma(v, a13); a23 = w2.fma(v, a23); a33 = w3.fma(v, a33);
        }
        a00.intoArray(acc, a); a10.intoArray(acc, a + L); a20.intoArray(acc, a + 2 * L); a30.intoArray(acc, a + 3 * L);
        a01.intoArray(acc, a + 4 * L); a11.intoArray(acc, a + 5 * L); a21.intoArray(acc, a + 6 * L); a31.intoArray(acc, a + 7 * L);
        a02.intoArray(acc, a + 8 * L); a12.intoArray(acc, a + 9 * L); a22.intoArray(acc, a + 10 * L); a32.intoArray(acc, a + 11 * L);
        a03.intoArray(acc, a + 12 * L); a13.intoArray(acc, a + 13 * L); a23.intoArray(acc, a + 14 * L); a33.intoArray(acc, a + 15 * L);
    }

    /** acc[a + i·L …] (token t, row i) += lane-wise products over columns [k0, k1). */
    private static void tile4x1(float[] w, int cols, float[] x, int t, int k0, int k1, float[] acc, int a) {
        FloatVector a0 = FloatVector.fromArray(F, acc, a), a1 = FloatVector.fromArray(F, acc, a + L);
        FloatVector a2 = FloatVector.fromArray(F, acc, a + 2 * L), a3 = FloatVector.fromArray(F, acc, a + 3 * L);
        int x0 = t * cols;
        for (int c = k0; c < k1; c += L) {
            FloatVector v = FloatVector.fromArray(F, x, x0 + c);
            a0 = FloatVector.fromArray(F, w, c).fma(v, a0);
            a1 = FloatVector.fromArray(F, w, cols + c).fma(v, a1);
            a2 = FloatVector.fromArray(F, w, 2 * cols + c).fma(v, a2);
            a3 = FloatVector.fromArray(F, w, 3 * cols + c).fma(v, a3);
        }
        a0.intoArray(acc, a); a1.intoArray(acc, a + L); a2.intoArray(acc, a + 2 * L); a3.intoArray(acc, a + 3 * L);
    }
}
