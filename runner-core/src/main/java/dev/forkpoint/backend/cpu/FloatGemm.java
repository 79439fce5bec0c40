package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * The matrix–matrix product shared by every type for prefill: each worker decodes four weight rows at a time into a
 * small float scratch (via {@link PackedMatrix#dequantizeRow}, never the whole tensor) and multiplies them with
 * groups of four activation rows in a 4×4 register tile of FMA accumulators, so every weight value decoded is reused
 * by all the tokens of a token block and every activation load by four rows.
 */
final class FloatGemm {
    private FloatGemm() {}

    private static final VectorSpecies<Float> F = FloatVector.SPECIES_512;
    private static final int R = 4;

    /** out[t·rows + r] = Σ_c W[r][c] · x[t·cols + c] with W read through {@code m.dequantizeRow}. */
    static void multiply(PackedMatrix m, float[] x, int n, float[] out, WorkerPool pool) {
        int rows = m.rows(), cols = m.cols();
        int tokenBlock = Math.max(R, Math.min(64, (1 << 18) / cols) / R * R);
        pool.runRanges(rows, pool.threads() * 4, R, (from, to) -> {
            float[] w = new float[R * cols];
            for (int t0 = 0; t0 < n; t0 += tokenBlock) {
                int t1 = Math.min(n, t0 + tokenBlock);
                for (int r0 = from; r0 < to; r0 += R) {
                    int nr = Math.min(R, to - r0);
                    for (int i = 0; i < nr; i++) m.dequantizeRow(r0 + i, w, i * cols);
                    if (nr < R) Arrays.fill(w, nr * cols, R * cols, 0f);
                    int t = t0;
                    for (; t + 4 <= t1; t += 4) tile4x4(w, cols, x, t, out, rows, r0, nr);
                    for (; t < t1; t++) tile4x1(w, cols, x, t, out, rows, r0, nr);
                }
            }
        });
    }

    private static void tile4x4(float[] w, int cols, float[] x, int t, float[] out, int rows, int r0, int nr) {
        FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00;
        FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
        FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
        FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
        int x0 = t * cols, x1 = x0 + cols, x2 = x1 + cols, x3 = x2 + cols;
        int c = 0, bound = F.loopBound(cols);
        for (; c < bound; c += F.length()) {
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
        float[] s = {
                a00.reduceLanes(VectorOperators.ADD), a01.reduceLanes(VectorOperators.ADD), a02.reduceLanes(VectorOperators.ADD), a03.reduceLanes(VectorOperators.ADD),
                a10.reduceLanes(VectorOperators.ADD), a11.reduceLanes(VectorOperators.ADD), a12.reduceLanes(VectorOperators.ADD), a13.reduceLanes(VectorOperators.ADD),
                a20.reduceLanes(VectorOperators.ADD), a21.reduceLanes(VectorOperators.ADD), a22.reduceLanes(VectorOperators.ADD), a23.reduceLanes(VectorOperators.ADD),
                a30.reduceLanes(VectorOperators.ADD), a31.reduceLanes(VectorOperators.ADD), a32.reduceLanes(VectorOperators.ADD), a33.reduceLanes(VectorOperators.ADD)};
        for (; c < cols; c++) {
            for (int i = 0; i < R; i++) {
                float wv = w[i * cols + c];
                for (int j = 0; j < 4; j++) s[i * 4 + j] += wv * x[x0 + j * cols + c];
            }
        }
        for (int i = 0; i < nr; i++) {
            for (int j = 0; j < 4; j++) out[(t + j) * rows + r0 + i] = s[i * 4 + j];
        }
    }

    private static void tile4x1(float[] w, int cols, float[] x, int t, float[] out, int rows, int r0, int nr) {
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        int x0 = t * cols;
        int c = 0, bound = F.loopBound(cols);
        for (; c < bound; c += F.length()) {
            FloatVector v = FloatVector.fromArray(F, x, x0 + c);
            a0 = FloatVector.fromArray(F, w, c).fma(v, a0);
            a1 = FloatVector.fromArray(F, w, cols + c).fma(v, a1);
            a2 = FloatVector.fromArray(F, w, 2 * cols + c).fma(v, a2);
            a3 = FloatVector.fromArray(F, w, 3 * cols + c).fma(v, a3);
        }
        float[] s = {a0.reduceLanes(VectorOperators.ADD), a1.reduceLanes(VectorOperators.ADD),
                a2.reduceLanes(VectorOperators.ADD), a3.reduceLanes(VectorOperators.ADD)};
        for (; c < cols; c++) {
            for (int i = 0; i < R; i++) s[i] += w[i * cols + c] * x[x0 + c];
        }
        for (int i = 0; i < nr; i++) out[t * rows + r0 + i] = s[i];
    }
}
