package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.I32;
import static dev.forkpoint.backend.cpu.KernelSupport.I64;
import static dev.forkpoint.backend.cpu.KernelSupport.shorts;

/**
 * A Q4_K weight matrix read in place. Decode quantises the activations to Q8_K (as llama.cpp does) and, per
 * super-block, sums d·d_x·Σ_j scale_j·Σ q·q_x − dmin·d_x·Σ_j min_j·Σ q_x with exact integer inner sums; prefill
 * goes through {@link FloatGemm} with the same quantised activations. With the native kernels
 * ({@link NativeKernels#q4_K}) every token count runs their integer kernel instead.
 */
final class Q4KMatrix implements PackedMatrix {
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final VectorSpecies<Integer> I = KernelSupport.I;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final int BYTES = 144;

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final int blocks;
    private final NativeKernels nativeKernels;   // null: the Java kernels below

    Q4KMatrix(MemorySegment data, int rows, int cols) {
        this(data, rows, cols, null);
    }

    /** With {@code nativeKernels} (null: none), which then multiply every token count (decode and prefill). */
    Q4KMatrix(MemorySegment data, int rows, int cols, NativeKernels nativeKernels) {
        KernelSupport.checkShape("Q4_K", data, rows, cols, 256, BYTES);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / 256;
        this.nativeKernels = nativeKernels;
    }

    public String typeName() { return "Q4_K"; }

    public int invariantTokens() {
        return NativeKernels.invariantTokens(nativeKernels);
    }

    /** Which kernels multiply: "java", or the native variant ("native avx512vnni"). */
    String kernels() { return nativeKernels == null ? "java" : "native " + nativeKernels.variant().suffix; }
    public int rows() { return rows; }
    public int cols() { return cols; }
    public long rowBytes() { return (long) blocks * BYTES; }

    public void multiplyRows(int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, firstRow, rowCount, x, n, out);
        Q8Activations a = Q8Activations.q8_K(x, n, cols);
        if (nativeKernels != null) {   // decode and prefill alike: a token's results do not depend on n
            byte[] codes = a.codes();
            float[] scales = a.d();
            short[] sums = a.sums();
            pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> nativeKernels.q4_K(data,
                    (long) (firstRow + from) * blocks * BYTES, blocks, to - from, codes, scales, sums, n, out, from, rowCount));
            return;
        }
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, firstRow, rowCount, a.dequantized(), n, out, pool);
            return;
        }
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            int[] sm = new int[16];
            float[] lanes = new float[KernelSupport.L];
            for (int r = firstRow + from; r < firstRow + to; r++) {
                for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot((long) r * blocks * BYTES, a, t * blocks, sm, lanes);
            }
        });
    }

    /** Unpacks the 6-bit scales (sm[0..7]) and mins (sm[8..15]) of the super-block at {@code o}. */
    private static void scales(MemorySegment w, long o, int[] sm) {
        long lo = w.get(I64, o + 4);
        int hi = w.get(I32, o + 12);
        for (int j = 0; j < 4; j++) {
            int qj = (int) (lo >>> (8 * j)) & 0xff;
            int qj4 = (int) (lo >>> (8 * j + 32)) & 0xff;
            int qj8 = (hi >>> (8 * j)) & 0xff;
            sm[j] = qj & 63;
            sm[8 + j] = qj4 & 63;
            sm[j + 4] = (qj8 & 0xf) | ((qj >>> 6) << 4);
            sm[8 + j + 4] = (qj8 >>> 4) | ((qj4 >>> 6) << 4);
        }
    }

    private float dot(long base, Q8Activations a, int b0, int[] sm, float[] lanes) {
        MemorySegment w = data;
        short[] q = a.q();
        float[] d = a.d();
        short[] bs = a.sums();
        FloatVector acc = FloatVector.zero(F);
        float mins = 0;
        for (int b = 0; b < blocks; b++) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            scales(w, o, sm);
            IntVector isum = IntVector.zero(I);
            int qi = bi * 256;
            for (int k = 0; k < 4; k++) {
                long qo = o + 16 + 32 * k;
                // bytes j … j+2L−1 of the group's 32: low nibbles are values 64k + j …, high nibbles 64k + 32 + j …;
                // each product pair is exact in 16 bits (|Σ| ≤ 2·15·127), the scaled sums in 32
                for (int j = 0; j < 32; j += 2 * L) {
                    ShortVector va = shorts(w, qo, j, VectorOperators.ZERO_EXTEND_B2S);
                    ShortVector vb = shorts(w, qo, j + L, VectorOperators.ZERO_EXTEND_B2S);
                    int xi = qi + 64 * k + j;
                    ShortVector pLo = va.and((short) 0xf).mul(ShortVector.fromArray(S, q, xi))
                            .add(vb.and((short) 0xf).mul(ShortVector.fromArray(S, q, xi + L)));
                    ShortVector pHi = va.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, xi + 32))
                            .add(vb.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, xi + 32 + L)));
                    isum = isum.add(((IntVector) pLo.convertShape(VectorOperators.S2I, I, 0)).mul(sm[2 * k]))
                            .add(((IntVector) pHi.convertShape(VectorOperators.S2I, I, 0)).mul(sm[2 * k + 1]));
                }
            }
            int msum = 0;
            int si = bi * 16;
            for (int j = 0; j < 8; j++) msum += sm[8 + j] * (bs[si + 2 * j] + bs[si + 2 * j + 1]);
            float dw = Float.float16ToFloat(w.get(I16, o)) * d[bi];
            float dm = Float.float16ToFloat(w.get(I16, o + 2)) * d[bi];
            acc = ((FloatVector) isum.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, dw), acc);
            mins += dm * msum;
        }
        acc.intoArray(lanes, 0);
        return KernelSupport.sum(lanes) - mins;
    }

    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        int[] sm = new int[16];
        long base = (long) row * blocks * BYTES;
        for (int b = 0; b < blocks; b++) {
            long o = base + (long) b * BYTES;
            scales(data, o, sm);
            float d = Float.float16ToFloat(data.get(I16, o));
            float dmin = Float.float16ToFloat(data.get(I16, o + 2));
            int t = dstOff + b * 256;
            for (int k = 0; k < 4; k++) {
                float d0 = d * sm[2 * k], m0 = dmin * sm[8 + 2 * k];
                float d1 = d * sm[2 * k + 1], m1 = dmin * sm[8 + 2 * k + 1];
                for (int j = 0; j < 32; j += L) {
                    ShortVector v = shorts(data, o + 16 + 32 * k, j, VectorOperators.ZERO_EXTEND_B2S);
                    int e = t + 64 * k + j;
                    ((FloatVector) v.and((short) 0xf).convertShape(VectorOperators.S2F, F, 0)).mul(d0).sub(m0).intoArray(dst, e);
                    ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).convertShape(VectorOperators.S2F, F, 0)).mul(d1).sub(m1).intoArray(dst, e + 32);
                }
            }
        }
    }
}
