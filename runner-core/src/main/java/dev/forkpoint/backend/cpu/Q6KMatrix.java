package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.I64;
import static dev.forkpoint.backend.cpu.KernelSupport.shorts;

/**
 * A Q6_K weight matrix read in place. Decode quantises the activations to Q8_K (as llama.cpp does) and, per
 * super-block, sums d·d_x·(Σ_j scale_j·Σ q·q_x − 32·Σ_j scale_j·Σ q_x) over the sixteen 16-value groups, with exact
 * integer inner sums; prefill goes through {@link FloatGemm} with the same quantised activations. With the native
 * kernels ({@link NativeKernels#q6_K}) every token count runs their integer kernel instead.
 */
final class Q6KMatrix implements PackedMatrix {
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final VectorSpecies<Integer> I = KernelSupport.I;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final int BYTES = 210;

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final int blocks;
    private final NativeKernels nativeKernels;   // null: the Java kernels below

    Q6KMatrix(MemorySegment data, int rows, int cols) {
        this(data, rows, cols, null);
    }

    /** With {@code nativeKernels} (null: none), which then multiply every token count (decode and prefill). */
    Q6KMatrix(MemorySegment data, int rows, int cols, NativeKernels nativeKernels) {
        KernelSupport.checkShape("Q6_K", data, rows, cols, 256, BYTES);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / 256;
        this.nativeKernels = nativeKernels;
    }

    public String typeName() { return "Q6_K"; }

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
            pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> nativeKernels.q6_K(data,
                    (long) (firstRow + from) * blocks * BYTES, blocks, to - from, codes, scales, sums, n, out, from, rowCount));
            return;
        }
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, firstRow, rowCount, a.dequantized(), n, out, pool);
            return;
        }
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            float[] lanes = new float[KernelSupport.L];
            for (int r = firstRow + from; r < firstRow + to; r++) {
                for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot((long) r * blocks * BYTES, a, t * blocks, lanes);
            }
        });
    }

    private float dot(long base, Q8Activations a, int b0, float[] lanes) {
        MemorySegment w = data;
        short[] q = a.q();
        float[] d = a.d();
        short[] bs = a.sums();
        FloatVector acc = FloatVector.zero(F);
        float offsets = 0;
        for (int b = 0; b < blocks; b++) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            IntVector isum = IntVector.zero(I);
            int corr = 0;
            for (int part = 0; part < 4; part++) {
                // values 128n + 16h + l (+32, +64, +96), l < 16, each quarter with its own scale
                int n = part >> 1, h = part & 1;
                long ql = o + 64 * n, qh = o + 128 + 32 * n, sc = o + 192 + 8 * n + h;
                long s4 = w.get(I64, sc); // bytes sc+0 … sc+7: scales at +0, +2, +4, +6 are this part's
                int c1 = (byte) s4, c2 = (byte) (s4 >>> 16), c3 = (byte) (s4 >>> 32), c4 = (byte) (s4 >>> 48);
                for (int l = 16 * h; l < 16 * h + 16; l += L) {
                    ShortVector lo = shorts(w, ql, l, VectorOperators.ZERO_EXTEND_B2S);
                    ShortVector hi = shorts(w, ql + 32, l, VectorOperators.ZERO_EXTEND_B2S);
                    ShortVector top = shorts(w, qh, l, VectorOperators.ZERO_EXTEND_B2S);
                    int xi = bi * 256 + 128 * n + l;
                    ShortVector p1 = lo.and((short) 0xf).or(top.and((short) 3).lanewise(VectorOperators.LSHL, 4)).mul(ShortVector.fromArray(S, q, xi));
                    ShortVector p2 = hi.and((short) 0xf).or(top.and((short) 0xc).lanewise(VectorOperators.LSHL, 2)).mul(ShortVector.fromArray(S, q, xi + 32));
                    ShortVector p3 = lo.lanewise(VectorOperators.LSHR, 4).or(top.and((short) 0x30)).mul(ShortVector.fromArray(S, q, xi + 64));
                    ShortVector p4 = hi.lanewise(VectorOperators.LSHR, 4).or(top.and((short) 0xc0).lanewise(VectorOperators.LSHR, 2)).mul(ShortVector.fromArray(S, q, xi + 96));
                    isum = isum.add(((IntVector) p1.convertShape(VectorOperators.S2I, I, 0)).mul(c1))
                            .add(((IntVector) p2.convertShape(VectorOperators.S2I, I, 0)).mul(c2))
                            .add(((IntVector) p3.convertShape(VectorOperators.S2I, I, 0)).mul(c3))
                            .add(((IntVector) p4.convertShape(VectorOperators.S2I, I, 0)).mul(c4));
                }
                int g = bi * 16 + 8 * n + h;
                corr += c1 * bs[g] + c2 * bs[g + 2] + c3 * bs[g + 4] + c4 * bs[g + 6];
            }
            float dw = Float.float16ToFloat(w.get(I16, o + 208)) * d[bi];
            acc = ((FloatVector) isum.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, dw), acc);
            offsets += dw * (32 * corr);
        }
        acc.intoArray(lanes, 0);
        return KernelSupport.sum(lanes) - offsets;
    }

    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        MemorySegment w = data;
        long base = (long) row * blocks * BYTES;
        for (int b = 0; b < blocks; b++) {
            long o = base + (long) b * BYTES;
            float d = Float.float16ToFloat(w.get(I16, o + 208));
            int t = dstOff + b * 256;
            for (int part = 0; part < 4; part++) {
                int n = part >> 1, h = part & 1;
                long ql = o + 64 * n, qh = o + 128 + 32 * n, sc = o + 192 + 8 * n + h;
                long s4 = w.get(I64, sc);
                for (int l = 16 * h; l < 16 * h + 16; l += L) {
                    ShortVector lo = shorts(w, ql, l, VectorOperators.ZERO_EXTEND_B2S);
                    ShortVector hi = shorts(w, ql + 32, l, VectorOperators.ZERO_EXTEND_B2S);
                    ShortVector top = shorts(w, qh, l, VectorOperators.ZERO_EXTEND_B2S);
                    int e = t + 128 * n + l;
                    ShortVector q1 = lo.and((short) 0xf).or(top.and((short) 3).lanewise(VectorOperators.LSHL, 4)).sub((short) 32);
                    ShortVector q2 = hi.and((short) 0xf).or(top.and((short) 0xc).lanewise(VectorOperators.LSHL, 2)).sub((short) 32);
                    ShortVector q3 = lo.lanewise(VectorOperators.LSHR, 4).or(top.and((short) 0x30)).sub((short) 32);
                    ShortVector q4 = hi.lanewise(VectorOperators.LSHR, 4).or(top.and((short) 0xc0).lanewise(VectorOperators.LSHR, 2)).sub((short) 32);
                    ((FloatVector) q1.convertShape(VectorOperators.S2F, F, 0)).mul(d * (byte) s4).intoArray(dst, e);
                    ((FloatVector) q2.convertShape(VectorOperators.S2F, F, 0)).mul(d * (byte) (s4 >>> 16)).intoArray(dst, e + 32);
                    ((FloatVector) q3.convertShape(VectorOperators.S2F, F, 0)).mul(d * (byte) (s4 >>> 32)).intoArray(dst, e + 64);
                    ((FloatVector) q4.convertShape(VectorOperators.S2F, F, 0)).mul(d * (byte) (s4 >>> 48)).intoArray(dst, e + 96);
                }
            }
        }
    }
}
