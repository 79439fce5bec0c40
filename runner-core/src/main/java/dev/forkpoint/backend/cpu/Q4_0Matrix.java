package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.LE;
import static dev.forkpoint.backend.cpu.KernelSupport.shorts;

/**
 * A Q4_0 weight matrix read in place. Decode quantises the activations to Q8_0 (as llama.cpp does) and sums
 * d_w · d_x · Σ (q_w − 8)·q_x per block exactly in 16-bit lanes of full-register short vectors; prefill goes through
 * {@link FloatGemm} with the same quantised activations.
 */
final class Q4_0Matrix implements PackedMatrix {
    private static final VectorSpecies<Short> W = KernelSupport.W;
    private static final VectorSpecies<Byte> WB = KernelSupport.WB;
    private static final VectorSpecies<Float> WF = KernelSupport.WF;
    private static final int WL = KernelSupport.WL;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final int BYTES = 18;

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final int blocks;
    private final NativeKernels nativeKernels;   // null: the Java kernels below

    Q4_0Matrix(MemorySegment data, int rows, int cols) {
        this(data, rows, cols, null);
    }

    /** With {@code nativeKernels} (null: none), which then multiply every token count (decode and prefill). */
    Q4_0Matrix(MemorySegment data, int rows, int cols, NativeKernels nativeKernels) {
        KernelSupport.checkShape("Q4_0", data, rows, cols, 32, BYTES);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / 32;
        this.nativeKernels = nativeKernels;
    }

    public String typeName() { return "Q4_0"; }

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
        boolean prefill = KernelSupport.gemm(n);
        Q8Activations a = Q8Activations.q8_0(x, n, cols);
        if (nativeKernels != null) {   // decode and prefill alike: a token's results do not depend on n
            // slices in whole 16-row tiles (the VNNI kernel holds sixteen rows in its lanes)
            byte[] codes = a.codes();
            float[] scales = a.d();
            pool.runRanges(rowCount, KernelSupport.parts(pool), 16, (from, to) -> nativeKernels.q4_0(data,
                    (long) (firstRow + from) * blocks * BYTES, blocks, to - from, codes, scales, n, out, from, rowCount));
            return;
        }
        if (prefill) {
            FloatGemm.multiply(this, firstRow, rowCount, a.dequantized(), n, out, pool);
            return;
        }
        short[] q = a.q();
        float[] d = a.d();
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            float[] lanes = new float[KernelSupport.WFL];
            for (int r = firstRow + from; r < firstRow + to; r++) {
                long base = (long) r * blocks * BYTES;
                for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot(base, q, d, t * blocks, lanes);
            }
        });
    }

    /**
     * Σ over the row's blocks of d_w · d_x · Σ (q_w − 8)·q_x: per block, 16/WL wide loads of WL bytes
     * ({@link KernelSupport#WL}: a full register of shorts), whose low nibbles − 8 (weights j …) times q_x[j …] plus
     * high nibbles − 8 (weights j+16 …) times q_x[j+16 …] are summed lane-wise in WL shorts (exact: |Σ| ≤ 16/WL · 2 ·
     * 8·127 ≤ 4064), folded into WL/2 ints by adding lane pairs, converted to float and added to the accumulator by one
     * FMA with the block's scale; even and odd blocks go to two accumulators. (Subtracting 8 from the nibbles costs two
     * register operations; the precomputed per-activation corrections it replaced cost a load, a subtraction and
     * L1 traffic: measured about 2× slower at four tokens.)
     *
     * The per-block work is written out in place, three times, rather than in a helper that takes or returns vectors:
     * at 128 bits (L = 4, e.g. NEON) the unrolled method grows past C2's inlining limits, a helper is then called
     * for real and its vectors are boxed on every call (~10× slower).
     */
    private float dot(long base, short[] q, float[] d, int b0, float[] lanes) {
        MemorySegment w = data;
        float[] half = KernelSupport.HALF_TO_FLOAT;
        FloatVector acc0 = FloatVector.zero(WF), acc1 = acc0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            ShortVector p = ShortVector.zero(W);
            for (int j = 0; j < 16; j += WL) {
                ShortVector v = (ShortVector) ByteVector.fromMemorySegment(WB, w, o + 2 + j, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, W, 0);
                int qi = bi * 32 + j;
                p = p.add(v.and((short) 0xf).sub((short) 8).mul(ShortVector.fromArray(W, q, qi)))
                        .add(v.lanewise(VectorOperators.LSHR, 4).sub((short) 8).mul(ShortVector.fromArray(W, q, qi + 16)));
            }
            IntVector x = p.reinterpretAsInts();
            IntVector s = x.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(x.lanewise(VectorOperators.ASHR, 16));
            acc0 = ((FloatVector) s.convertShape(VectorOperators.I2F, WF, 0))
                    .fma(FloatVector.broadcast(WF, half[w.get(I16, o) & 0xffff] * d[bi]), acc0);
            long o1 = o + BYTES;
            int bi1 = bi + 1;
            ShortVector p1 = ShortVector.zero(W);
            for (int j = 0; j < 16; j += WL) {
                ShortVector u = (ShortVector) ByteVector.fromMemorySegment(WB, w, o1 + 2 + j, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, W, 0);
                int qi = bi1 * 32 + j;
                p1 = p1.add(u.and((short) 0xf).sub((short) 8).mul(ShortVector.fromArray(W, q, qi)))
                        .add(u.lanewise(VectorOperators.LSHR, 4).sub((short) 8).mul(ShortVector.fromArray(W, q, qi + 16)));
            }
            IntVector x1 = p1.reinterpretAsInts();
            IntVector s1 = x1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(x1.lanewise(VectorOperators.ASHR, 16));
            acc1 = ((FloatVector) s1.convertShape(VectorOperators.I2F, WF, 0))
                    .fma(FloatVector.broadcast(WF, half[w.get(I16, o1) & 0xffff] * d[bi1]), acc1);
        }
        if (b < blocks) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            ShortVector p = ShortVector.zero(W);
            for (int j = 0; j < 16; j += WL) {
                ShortVector v = (ShortVector) ByteVector.fromMemorySegment(WB, w, o + 2 + j, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, W, 0);
                int qi = bi * 32 + j;
                p = p.add(v.and((short) 0xf).sub((short) 8).mul(ShortVector.fromArray(W, q, qi)))
                        .add(v.lanewise(VectorOperators.LSHR, 4).sub((short) 8).mul(ShortVector.fromArray(W, q, qi + 16)));
            }
            IntVector x = p.reinterpretAsInts();
            IntVector s = x.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(x.lanewise(VectorOperators.ASHR, 16));
            acc0 = ((FloatVector) s.convertShape(VectorOperators.I2F, WF, 0))
                    .fma(FloatVector.broadcast(WF, half[w.get(I16, o) & 0xffff] * d[bi]), acc0);
        }
        acc0.add(acc1).intoArray(lanes, 0);
        return KernelSupport.sumWide(lanes);
    }

    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        long base = (long) row * blocks * BYTES;
        for (int b = 0; b < blocks; b++) {
            long o = base + (long) b * BYTES;
            float d = Float.float16ToFloat(data.get(I16, o));
            int t = dstOff + b * 32;
            for (int j = 0; j < 16; j += L) {
                ShortVector v = shorts(data, o + 2, j, VectorOperators.ZERO_EXTEND_B2S);
                ((FloatVector) v.and((short) 0xf).sub((short) 8).convertShape(VectorOperators.S2F, F, 0)).mul(d).intoArray(dst, t + j);
                ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).sub((short) 8).convertShape(VectorOperators.S2F, F, 0)).mul(d).intoArray(dst, t + j + 16);
            }
        }
    }
}
