package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlType;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** An F32 weight matrix read from the mapped file; FMA dot products, {@link FloatGemm} for prefill. */
final class F32Matrix implements PackedMatrix {
    private static final VectorSpecies<Float> S = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final MemorySegment data;
    private final int rows;
    private final int cols;

    F32Matrix(MemorySegment data, int rows, int cols) {
        KernelSupport.checkShape("F32", data, rows, cols, 1, 4);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
    }

    public GgmlType type() { return GgmlType.F32; }
    public int rows() { return rows; }
    public int cols() { return cols; }

    public void multiply(float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, x, n, out);
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, x, n, out, pool);
            return;
        }
        pool.runRanges(rows, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = from; r < to; r++) {
                long base = (long) r * cols * 4;
                int t = 0;
                for (; t + KernelSupport.DECODE_GROUP <= n; t += KernelSupport.DECODE_GROUP) dot4(base, x, t * cols, out, t * rows + r);
                for (; t < n; t++) out[t * rows + r] = dot(base, x, t * cols);
            }
        });
    }

    /**
     * {@link #dot} for the four tokens at x[x0…], x[x0+cols…], …, each weight vector loaded once: every token's sum
     * is computed in exactly dot's order (same accumulators, same FMAs, same reduction), so the results are
     * bit-identical. Writes out[o], out[o+rows], out[o+2·rows], out[o+3·rows].
     */
    private void dot4(long base, float[] x, int x0, float[] out, int o) {
        int x1 = x0 + cols, x2 = x1 + cols, x3 = x2 + cols;
        FloatVector a0 = FloatVector.zero(S), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
        int c = 0;
        for (; c + 2 * L <= cols; c += 2 * L) {
            FloatVector w = FloatVector.fromMemorySegment(S, data, base + c * 4L, ByteOrder.LITTLE_ENDIAN);
            FloatVector u = FloatVector.fromMemorySegment(S, data, base + c * 4L + 4L * L, ByteOrder.LITTLE_ENDIAN);
            a0 = w.fma(FloatVector.fromArray(S, x, x0 + c), a0);
            b0 = u.fma(FloatVector.fromArray(S, x, x0 + c + L), b0);
            a1 = w.fma(FloatVector.fromArray(S, x, x1 + c), a1);
            b1 = u.fma(FloatVector.fromArray(S, x, x1 + c + L), b1);
            a2 = w.fma(FloatVector.fromArray(S, x, x2 + c), a2);
            b2 = u.fma(FloatVector.fromArray(S, x, x2 + c + L), b2);
            a3 = w.fma(FloatVector.fromArray(S, x, x3 + c), a3);
            b3 = u.fma(FloatVector.fromArray(S, x, x3 + c + L), b3);
        }
        for (; c + L <= cols; c += L) {
            FloatVector w = FloatVector.fromMemorySegment(S, data, base + c * 4L, ByteOrder.LITTLE_ENDIAN);
            a0 = w.fma(FloatVector.fromArray(S, x, x0 + c), a0);
            a1 = w.fma(FloatVector.fromArray(S, x, x1 + c), a1);
            a2 = w.fma(FloatVector.fromArray(S, x, x2 + c), a2);
            a3 = w.fma(FloatVector.fromArray(S, x, x3 + c), a3);
        }
        float s0 = KernelSupport.sum(a0.add(b0)), s1 = KernelSupport.sum(a1.add(b1));
        float s2 = KernelSupport.sum(a2.add(b2)), s3 = KernelSupport.sum(a3.add(b3));
        for (; c < cols; c++) {
            float wc = data.get(F, base + c * 4L);
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
        FloatVector acc0 = FloatVector.zero(S), acc1 = acc0;
        int c = 0;
        for (; c + 2 * L <= cols; c += 2 * L) {
            acc0 = FloatVector.fromMemorySegment(S, data, base + c * 4L, ByteOrder.LITTLE_ENDIAN).fma(FloatVector.fromArray(S, x, xOff + c), acc0);
            acc1 = FloatVector.fromMemorySegment(S, data, base + c * 4L + 4L * L, ByteOrder.LITTLE_ENDIAN).fma(FloatVector.fromArray(S, x, xOff + c + L), acc1);
        }
        for (; c + L <= cols; c += L) {
            acc0 = FloatVector.fromMemorySegment(S, data, base + c * 4L, ByteOrder.LITTLE_ENDIAN).fma(FloatVector.fromArray(S, x, xOff + c), acc0);
        }
        float sum = KernelSupport.sum(acc0.add(acc1));
        for (; c < cols; c++) sum = Math.fma(data.get(F, base + c * 4L), x[xOff + c], sum);
        return sum;
    }

    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        MemorySegment.copy(data, F, (long) row * cols * 4, dst, dstOff, cols);
    }
}
