package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlType;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.LE;

/**
 * A Q4_0 weight matrix read in place. Decode quantises the activations to Q8_0 (as llama.cpp does) and sums
 * d_w · d_x · Σ (q_w − 8)·q_x per block exactly in 16-bit lanes (the −8 applied through precomputed
 * 8·(x_i + x_{i+16}) corrections); prefill goes through {@link FloatGemm} with the same quantised activations.
 */
final class Q4_0Matrix implements PackedMatrix {
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_128;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_512;
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

    public GgmlType type() { return GgmlType.Q4_0; }
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
                int t = 0;
                for (; t + KernelSupport.DECODE_GROUP <= n; t += KernelSupport.DECODE_GROUP) dot4(base, q, d, c8, t * blocks, out, t * rows + r);
                for (; t < n; t++) out[t * rows + r] = dot(base, q, d, c8, t * blocks);
            }
        });
    }

    /**
     * {@link #dot} for four tokens whose blocks start at b0, b0+blocks, b0+2·blocks, b0+3·blocks, each weight block
     * unpacked once: every token's sum is computed in exactly dot's order (same products, corrections, accumulators
     * and reduction), so the results are bit-identical. Writes out[o + k·rows], k &lt; 4.
     */
    private void dot4(long base, short[] q, float[] d, short[] c8, int b0, float[] out, int o) {
        MemorySegment w = data;
        float[] half = KernelSupport.HALF_TO_FLOAT;
        int c0 = b0, c1 = c0 + blocks, c2 = c1 + blocks, c3 = c2 + blocks;
        FloatVector a0 = FloatVector.zero(F), e0 = a0, a1 = a0, e1 = a0, a2 = a0, e2 = a0, a3 = a0, e3 = a0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long bo = base + (long) b * BYTES;
            ShortVector v = (ShortVector) ByteVector.fromMemorySegment(B, w, bo + 2, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S, 0);
            ShortVector vl = v.and((short) 0xf), vh = v.lanewise(VectorOperators.LSHR, 4);
            float h0 = half[w.get(I16, bo) & 0xffff];
            long bo1 = bo + BYTES;
            ShortVector u = (ShortVector) ByteVector.fromMemorySegment(B, w, bo1 + 2, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S, 0);
            ShortVector ul = u.and((short) 0xf), uh = u.lanewise(VectorOperators.LSHR, 4);
            float h1 = half[w.get(I16, bo1) & 0xffff];
            {
                int bi = c0 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a0);
                ShortVector p1 = ul.mul(ShortVector.fromArray(S, q, qi + 32)).add(uh.mul(ShortVector.fromArray(S, q, qi + 48)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16 + 16));
                e0 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[bi + 1]), e0);
            }
            {
                int bi = c1 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a1 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a1);
                ShortVector p1 = ul.mul(ShortVector.fromArray(S, q, qi + 32)).add(uh.mul(ShortVector.fromArray(S, q, qi + 48)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16 + 16));
                e1 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[bi + 1]), e1);
            }
            {
                int bi = c2 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a2 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a2);
                ShortVector p1 = ul.mul(ShortVector.fromArray(S, q, qi + 32)).add(uh.mul(ShortVector.fromArray(S, q, qi + 48)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16 + 16));
                e2 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[bi + 1]), e2);
            }
            {
                int bi = c3 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a3 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a3);
                ShortVector p1 = ul.mul(ShortVector.fromArray(S, q, qi + 32)).add(uh.mul(ShortVector.fromArray(S, q, qi + 48)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16 + 16));
                e3 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[bi + 1]), e3);
            }
        }
        if (b < blocks) {
            long bo = base + (long) b * BYTES;
            ShortVector v = (ShortVector) ByteVector.fromMemorySegment(B, w, bo + 2, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S, 0);
            ShortVector vl = v.and((short) 0xf), vh = v.lanewise(VectorOperators.LSHR, 4);
            float h0 = half[w.get(I16, bo) & 0xffff];
            {
                int bi = c0 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a0);
            }
            {
                int bi = c1 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a1 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a1);
            }
            {
                int bi = c2 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a2 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a2);
            }
            {
                int bi = c3 + b, qi = bi * 32;
                ShortVector p = vl.mul(ShortVector.fromArray(S, q, qi)).add(vh.mul(ShortVector.fromArray(S, q, qi + 16)))
                        .sub(ShortVector.fromArray(S, c8, bi * 16));
                a3 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[bi]), a3);
            }
        }
        out[o] = a0.add(e0).reduceLanes(VectorOperators.ADD);
        out[o + rows] = a1.add(e1).reduceLanes(VectorOperators.ADD);
        out[o + 2 * rows] = a2.add(e2).reduceLanes(VectorOperators.ADD);
        out[o + 3 * rows] = a3.add(e3).reduceLanes(VectorOperators.ADD);
    }


    /**
     * Σ over the row's blocks of d_w · d_x · Σ (q_w − 8)·q_x, exact in 16-bit lanes (|Σ| ≤ 32·8·127 fits), converted
     * to float per block; two blocks per iteration into two accumulators, the block body written out in place (a
     * helper method taking vectors risks not being inlined, which boxes them).
     */
    private float dot(long base, short[] q, float[] d, short[] c8, int b0) {
        MemorySegment w = data;
        float[] half = KernelSupport.HALF_TO_FLOAT;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            int qi = bi * 32;
            ShortVector v = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S, 0);
            ShortVector p = v.and((short) 0xf).mul(ShortVector.fromArray(S, q, qi))
                    .add(v.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, qi + 16)))
                    .sub(ShortVector.fromArray(S, c8, bi * 16));
            float s0 = half[w.get(I16, o) & 0xffff] * d[bi];
            acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, s0), acc0);
            long o1 = o + BYTES;
            ShortVector u = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + 2, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S, 0);
            ShortVector p1 = u.and((short) 0xf).mul(ShortVector.fromArray(S, q, qi + 32))
                    .add(u.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, qi + 48)))
                    .sub(ShortVector.fromArray(S, c8, bi * 16 + 16));
            float s1 = half[w.get(I16, o1) & 0xffff] * d[bi + 1];
            acc1 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, s1), acc1);
        }
        if (b < blocks) {
            long o = base + (long) b * BYTES;
            int bi = b0 + b;
            int qi = bi * 32;
            ShortVector v = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2, LE).convertShape(VectorOperators.ZERO_EXTEND_B2S, S, 0);
            ShortVector p = v.and((short) 0xf).mul(ShortVector.fromArray(S, q, qi))
                    .add(v.lanewise(VectorOperators.LSHR, 4).mul(ShortVector.fromArray(S, q, qi + 16)))
                    .sub(ShortVector.fromArray(S, c8, bi * 16));
            float s0 = half[w.get(I16, o) & 0xffff] * d[bi];
            acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, s0), acc0);
        }
        return acc0.add(acc1).reduceLanes(VectorOperators.ADD);
    }

    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        long base = (long) row * blocks * BYTES;
        for (int b = 0; b < blocks; b++) {
            long o = base + (long) b * BYTES;
            float d = Float.float16ToFloat(data.get(I16, o));
            int t = dstOff + b * 32;
            IntVector v = (IntVector) ByteVector.fromMemorySegment(B, data, o + 2, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            ((FloatVector) v.and(0xf).sub(8).convert(VectorOperators.I2F, 0)).mul(d).intoArray(dst, t);
            ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).sub(8).convert(VectorOperators.I2F, 0)).mul(d).intoArray(dst, t + 16);
        }
    }
}
