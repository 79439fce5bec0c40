package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * An F32 weight matrix read in place (from the mapped file, or a heap array for host weights). On the native kernels
 * ({@code forkpoint_float.c}) every token count, each (row, token) sum formed the same way whatever n (see
 * {@link NativeKernels#floatRows}); on the Java kernels FMA dot products for decode and {@link FloatGemm} for prefill.
 */
final class F32Matrix implements PackedMatrix {
    private static final VectorSpecies<Float> S = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final NativeKernels nativeKernels;   // null: the Java kernels below

    F32Matrix(MemorySegment data, int rows, int cols) {
        this(data, rows, cols, null);
    }

    /** With {@code nativeKernels} (null: none), which then multiply every token count (decode and prefill). */
    F32Matrix(MemorySegment data, int rows, int cols, NativeKernels nativeKernels) {
        KernelSupport.checkShape("F32", data, rows, cols, 1, 4);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.nativeKernels = nativeKernels;
    }

    public String typeName() { return "F32"; }

    public int invariantTokens() {
        return NativeKernels.invariantTokens(nativeKernels);
    }

    /** Which kernels multiply: "java", or the native variant ("native avx512vnni"). */
    String kernels() { return nativeKernels == null ? "java" : "native " + nativeKernels.variant().suffix; }

    public int rows() { return rows; }
    public int cols() { return cols; }
    public long rowBytes() { return (long) cols * 4; }

    public void multiplyRows(int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, firstRow, rowCount, x, n, out);
        if (nativeKernels != null) {   // decode and prefill alike: a token's results do not depend on n
            pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> nativeKernels.floatRows(NativeKernels.FloatKind.F32,
                    data, firstRow + from, to - from, cols, x, n, out, from, rowCount));
            return;
        }
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, firstRow, rowCount, x, n, out, pool);
            return;
        }
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = firstRow + from; r < firstRow + to; r++) {
                long base = (long) r * cols * 4;
                for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot(base, x, t * cols);
            }
        });
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
