package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.LE;

/**
 * An F16 weight matrix read in place; float activations. On the native kernels ({@code forkpoint_float.c}) every token
 * count, each (row, token) sum formed the same way whatever n (see {@link NativeKernels#floatRows}); on the Java
 * kernels FMA dot products for decode and {@link FloatGemm} for prefill.
 */
final class F16Matrix implements PackedMatrix {
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final VectorSpecies<Integer> I = KernelSupport.I;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final float TWO_POW_112 = 0x1p112f;

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final NativeKernels nativeKernels;   // null: the Java kernels below

    F16Matrix(MemorySegment data, int rows, int cols) {
        this(data, rows, cols, null);
    }

    /** With {@code nativeKernels} (null: none), which then multiply every token count (decode and prefill). */
    F16Matrix(MemorySegment data, int rows, int cols, NativeKernels nativeKernels) {
        KernelSupport.checkShape("F16", data, rows, cols, 1, 2);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.nativeKernels = nativeKernels;
    }

    public String typeName() { return "F16"; }

    public int invariantTokens() {
        return NativeKernels.invariantTokens(nativeKernels);
    }

    /** Which kernels multiply: "java", or the native variant ("native avx512vnni"). */
    String kernels() { return nativeKernels == null ? "java" : "native " + nativeKernels.variant().suffix; }

    public int rows() { return rows; }
    public int cols() { return cols; }
    public long rowBytes() { return (long) cols * 2; }

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

    public void multiplyRows(int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, firstRow, rowCount, x, n, out);
        if (nativeKernels != null) {   // decode and prefill alike: a token's results do not depend on n
            pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> nativeKernels.floatRows(NativeKernels.FloatKind.F16,
                    data, firstRow + from, to - from, cols, x, n, out, from, rowCount));
            return;
        }
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, firstRow, rowCount, x, n, out, pool);
            return;
        }
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = firstRow + from; r < firstRow + to; r++) {
                long base = (long) r * cols * 2;
                for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot(base, x, t * cols);
            }
        });
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
