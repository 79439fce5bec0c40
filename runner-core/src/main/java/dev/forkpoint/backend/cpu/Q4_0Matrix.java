package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.LE;
import static dev.forkpoint.backend.cpu.KernelSupport.shorts;

/**
 * A Q4_0 weight matrix read in place. Decode quantises the activations to Q8_0 (as llama.cpp does) and sums
 * d_w · d_x · Σ (q_w − 8)·q_x per block exactly in 16-bit lanes (the −8 applied through precomputed
 * 8·(x_i + x_{i+16}) corrections); prefill goes through {@link FloatGemm} with the same quantised activations.
 */
final class Q4_0Matrix implements PackedMatrix {
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final VectorSpecies<Byte> B = KernelSupport.B;
    private static final int BL = KernelSupport.BL;
    private static final int BYTE_PARTS = KernelSupport.BYTE_PARTS;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final int BYTES = 18;

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final int blocks;

    Q4_0Matrix(MemorySegment data, int rows, int cols) {
        KernelSupport.checkShape("Q4_0", data, rows, cols, 32, BYTES);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / 32;
    }

    public String typeName() { return "Q4_0"; }
    public int rows() { return rows; }
    public int cols() { return cols; }

    public void multiply(float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, x, n, out);
        boolean prefill = KernelSupport.gemm(n);
        Q8Activations a = Q8Activations.q8_0(x, n, cols, !prefill);
        if (prefill) {
            FloatGemm.multiply(this, a.dequantized(), n, out, pool);
            return;
        }
        short[] q = a.q();
        float[] d = a.d();
        short[] c8 = a.sums();
        pool.runRanges(rows, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = from; r < to; r++) {
                long base = (long) r * blocks * BYTES;
                for (int t = 0; t < n; t++) out[t * rows + r] = dot(base, q, d, c8, t * blocks);
            }
        });
    }

    /**
     * Σ over the row's blocks of d_w · d_x · Σ (q_w − 8)·q_x: per block, 16/L lane-wise partial sums of two weights
     * per lane, each converted to float and added to the accumulator by an FMA with the block's scale; even and odd
     * blocks go to two accumulators. Lanes j … j+L−1 of a block's partial sum are the low nibbles (weights j …) times
     * q_x[j …], plus the high nibbles (weights j+16 …) times q_x[j+16 …], minus the offset correction 8·(q_x[j] +
     * q_x[j+16]); exact in 16-bit lanes (|Σ| ≤ 2·8·127 fits).
     *
     * The per-lane work is written out in place, three times, rather than in a helper that takes or returns vectors:
     * at 128 bits (L = 4, e.g. NEON) the unrolled method grows past C2's inlining limits, a helper is then called
     * for real and its vectors are boxed on every call (~10× slower). The byte load is {@link KernelSupport#shorts}
     * spelled out: bytes j … j+L−1 are part (j / L) mod BYTE_PARTS of the BL-byte load at j rounded down to BL.
     */
    private float dot(long base, short[] q, float[] d, short[] c8, int b0) {
        MemorySegment w = data;
        float[] half = KernelSupport.HALF_TO_FLOAT;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            FloatVector s0 = FloatVector.broadcast(F, half[w.get(I16, o) & 0xffff] * d[bi]);
            for (int j = 0; j < 16; j += L) {
                ShortVector v = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2 + (j & -BL), LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, S, (j / L) & (BYTE_PARTS - 1));
                int qi = bi * 32 + j;
                ShortVector p = v.and((short) 0xf).mul(ShortVector.fromArray(S, q, qi))
                        .add(v.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16 + j));
                acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s0, acc0);
            }
            long o1 = o + BYTES;
            int bi1 = bi + 1;
            FloatVector s1 = FloatVector.broadcast(F, half[w.get(I16, o1) & 0xffff] * d[bi1]);
            for (int j = 0; j < 16; j += L) {
                ShortVector u = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + 2 + (j & -BL), LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, S, (j / L) & (BYTE_PARTS - 1));
                int qi = bi1 * 32 + j;
                ShortVector p = u.and((short) 0xf).mul(ShortVector.fromArray(S, q, qi))
                        .add(u.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi1 * 16 + j));
                acc1 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s1, acc1);
            }
        }
        if (b < blocks) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            FloatVector s0 = FloatVector.broadcast(F, half[w.get(I16, o) & 0xffff] * d[bi]);
            for (int j = 0; j < 16; j += L) {
                ShortVector v = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2 + (j & -BL), LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2S, S, (j / L) & (BYTE_PARTS - 1));
                int qi = bi * 32 + j;
                ShortVector p = v.and((short) 0xf).mul(ShortVector.fromArray(S, q, qi))
                        .add(v.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16 + j));
                acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s0, acc0);
            }
        }
        return KernelSupport.sum(acc0.add(acc1));
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
