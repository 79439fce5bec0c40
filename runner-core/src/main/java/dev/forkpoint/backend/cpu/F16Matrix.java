package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlType;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.LE;

/** An F16 weight matrix read in place; float activations, FMA dot products. */
final class F16Matrix implements PackedMatrix {
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final VectorSpecies<Integer> I = KernelSupport.I;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final float TWO_POW_112 = 0x1p112f;

    private final MemorySegment data;
    private final int rows;
    private final int cols;

    F16Matrix(MemorySegment data, int rows, int cols) {
        KernelSupport.checkShape("F16", data, rows, cols, 1, 2);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
    }

    public GgmlType type() { return GgmlType.F16; }
    public int rows() { return rows; }
    public int cols() { return cols; }

    /** IEEE half → float for L lanes: exponent rebias by a multiply (exact for normals and subnormals), Inf/NaN by mask. */
    static FloatVector toFloat(ShortVector h) {
        IntVector v = (IntVector) h.convertShape(VectorOperators.ZERO_EXTEND_S2I, I, 0);
        IntVector em = v.and(0x7fff);
        IntVector sign = v.and(0x8000).lanewise(VectorOperators.LSHL, 16);
        FloatVector mag = em.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(TWO_POW_112);
        VectorMask<Integer> special = em.compare(VectorOperators.GE, 0x7c00);
        IntVector bits = mag.reinterpretAsInts();
        if (special.anyTrue()) {
            bits = bits.blend(em.lanewise(VectorOperators.LSHL, 13).or(0x7f800000), special);
        }
        return bits.or(sign).reinterpretAsFloats();
    }

    public void multiply(float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, x, n, out);
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, x, n, out, pool);
            return;
        }
        pool.runRanges(rows, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = from; r < to; r++) {
                long base = (long) r * cols * 2;
                int t = 0;
                for (; t + KernelSupport.DECODE_GROUP <= n; t += KernelSupport.DECODE_GROUP) dot4(base, x, t * cols, out, t * rows + r);
                for (; t < n; t++) out[t * rows + r] = dot(base, x, t * cols);
            }
        });
    }

    /**
     * {@link #dot} for the four tokens at x[x0…], x[x0+cols…], …, each weight vector converted once: every token's
     * sum is computed in exactly dot's order, so the results are bit-identical. Writes out[o + k·rows], k &lt; 4.
     */
    private void dot4(long base, float[] x, int x0, float[] out, int o) {
        int x1 = x0 + cols, x2 = x1 + cols, x3 = x2 + cols;
        FloatVector a0 = FloatVector.zero(F), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
        int c = 0;
        for (; c + 2 * L <= cols; c += 2 * L) {
            FloatVector w = toFloat(ShortVector.fromMemorySegment(S, data, base + 2L * c, LE));
            FloatVector u = toFloat(ShortVector.fromMemorySegment(S, data, base + 2L * c + 2L * L, LE));
            a0 = w.fma(FloatVector.fromArray(F, x, x0 + c), a0);
            b0 = u.fma(FloatVector.fromArray(F, x, x0 + c + L), b0);
            a1 = w.fma(FloatVector.fromArray(F, x, x1 + c), a1);
            b1 = u.fma(FloatVector.fromArray(F, x, x1 + c + L), b1);
            a2 = w.fma(FloatVector.fromArray(F, x, x2 + c), a2);
            b2 = u.fma(FloatVector.fromArray(F, x, x2 + c + L), b2);
            a3 = w.fma(FloatVector.fromArray(F, x, x3 + c), a3);
            b3 = u.fma(FloatVector.fromArray(F, x, x3 + c + L), b3);
        }
        for (; c + L <= cols; c += L) {
            FloatVector w = toFloat(ShortVector.fromMemorySegment(S, data, base + 2L * c, LE));
            a0 = w.fma(FloatVector.fromArray(F, x, x0 + c), a0);
            a1 = w.fma(FloatVector.fromArray(F, x, x1 + c), a1);
            a2 = w.fma(FloatVector.fromArray(F, x, x2 + c), a2);
            a3 = w.fma(FloatVector.fromArray(F, x, x3 + c), a3);
        }
        float s0 = KernelSupport.sum(a0.add(b0)), s1 = KernelSupport.sum(a1.add(b1));
        float s2 = KernelSupport.sum(a2.add(b2)), s3 = KernelSupport.sum(a3.add(b3));
        for (; c < cols; c++) {
            float wc = Float.float16ToFloat(data.get(I16, base + 2L * c));
            s0 = Math.fma(wc, x[x0 + c], s0);
            s1 = Math.fma(wc, x[x1 + c], s1);
            s2 = Math.fma(wc, x[x2 + c], s2);
            s3 = Math.fma(wc, x[x3 + c], s3);
        }
        out[o] = s0;
        out[o + rows] = s1;
        out[o + 2 * rows] = s2;
        out[o + 3 * rows] = s3;
    }

    private float dot(long base, float[] x, int xOff) {
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int c = 0;
        for (; c + 2 * L <= cols; c += 2 * L) {
            acc0 = toFloat(ShortVector.fromMemorySegment(S, data, base + 2L * c, LE)).fma(FloatVector.fromArray(F, x, xOff + c), acc0);
            acc1 = toFloat(ShortVector.fromMemorySegment(S, data, base + 2L * c + 2L * L, LE)).fma(FloatVector.fromArray(F, x, xOff + c + L), acc1);
        }
        for (; c + L <= cols; c += L) {
            acc0 = toFloat(ShortVector.fromMemorySegment(S, data, base + 2L * c, LE)).fma(FloatVector.fromArray(F, x, xOff + c), acc0);
        }
        float sum = KernelSupport.sum(acc0.add(acc1));
        for (; c < cols; c++) sum = Math.fma(Float.float16ToFloat(data.get(I16, base + 2L * c)), x[xOff + c], sum);
        return sum;
    }

    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        long base = (long) row * cols * 2;
        int c = 0;
        for (; c + L <= cols; c += L) toFloat(ShortVector.fromMemorySegment(S, data, base + 2L * c, LE)).intoArray(dst, dstOff + c);
        for (; c < cols; c++) dst[dstOff + c] = Float.float16ToFloat(data.get(I16, base + 2L * c));
    }
}
