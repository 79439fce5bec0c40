package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlType;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;

import static dev.forkpoint.backend.cpu.KernelSupport.I16;
import static dev.forkpoint.backend.cpu.KernelSupport.LE;

/**
 * A Q8_0 weight matrix read in place. Decode quantises the activations to Q8_0 (as llama.cpp does) and sums
 * d_w · d_x · Σ q_w·q_x per block, with exact 16-bit products; prefill goes through {@link FloatGemm} with the same
 * quantised activations.
 */
final class Q8_0Matrix implements PackedMatrix {
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_128;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_256;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_512;
    private static final int BYTES = 34;

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final int blocks;

    Q8_0Matrix(MemorySegment data, int rows, int cols) {
        KernelSupport.checkShape("Q8_0", data, rows, cols, 32, BYTES);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / 32;
    }

    public GgmlType type() { return GgmlType.Q8_0; }
    public int rows() { return rows; }
    public int cols() { return cols; }

    public void multiply(float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, x, n, out);
        Q8Activations a = Q8Activations.q8_0(x, n, cols, false);
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, a.dequantized(), n, out, pool);
            return;
        }
        short[] q = a.q();
        float[] d = a.d();
        pool.runRanges(rows, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = from; r < to; r++) {
                long base = (long) r * blocks * BYTES;
                int t = 0;
                for (; t + KernelSupport.DECODE_GROUP <= n; t += KernelSupport.DECODE_GROUP) dot4(base, q, d, t * blocks, out, t * rows + r);
                for (; t < n; t++) out[t * rows + r] = dot(base, q, d, t * blocks);
            }
        });
    }

    /**
     * {@link #dot} for four tokens whose blocks start at b0, b0+blocks, b0+2·blocks, b0+3·blocks, each weight block
     * widened once: every token's sum is computed in exactly dot's order (same products, accumulators and
     * reduction), so the results are bit-identical. Writes out[o + k·rows], k &lt; 4.
     */
    private void dot4(long base, short[] q, float[] d, int b0, float[] out, int o) {
        MemorySegment w = data;
        float[] half = KernelSupport.HALF_TO_FLOAT;
        int c0 = b0, c1 = c0 + blocks, c2 = c1 + blocks, c3 = c2 + blocks;
        FloatVector a0 = FloatVector.zero(F), e0 = a0, a1 = a0, e1 = a0, a2 = a0, e2 = a0, a3 = a0, e3 = a0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long bo = base + (long) b * BYTES;
            ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, bo + 2, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, bo + 18, LE).convertShape(VectorOperators.B2S, S, 0);
            float h0 = half[w.get(I16, bo) & 0xffff];
            long bo1 = bo + BYTES;
            ShortVector u0 = (ShortVector) ByteVector.fromMemorySegment(B, w, bo1 + 2, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector u1 = (ShortVector) ByteVector.fromMemorySegment(B, w, bo1 + 18, LE).convertShape(VectorOperators.B2S, S, 0);
            float h1 = half[w.get(I16, bo1) & 0xffff];
            {
                int qi = (c0 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c0 + b]), a0);
                ShortVector p1 = u0.mul(ShortVector.fromArray(S, q, qi + 32)).add(u1.mul(ShortVector.fromArray(S, q, qi + 48)));
                e0 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[c0 + b + 1]), e0);
            }
            {
                int qi = (c1 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a1 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c1 + b]), a1);
                ShortVector p1 = u0.mul(ShortVector.fromArray(S, q, qi + 32)).add(u1.mul(ShortVector.fromArray(S, q, qi + 48)));
                e1 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[c1 + b + 1]), e1);
            }
            {
                int qi = (c2 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a2 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c2 + b]), a2);
                ShortVector p1 = u0.mul(ShortVector.fromArray(S, q, qi + 32)).add(u1.mul(ShortVector.fromArray(S, q, qi + 48)));
                e2 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[c2 + b + 1]), e2);
            }
            {
                int qi = (c3 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a3 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c3 + b]), a3);
                ShortVector p1 = u0.mul(ShortVector.fromArray(S, q, qi + 32)).add(u1.mul(ShortVector.fromArray(S, q, qi + 48)));
                e3 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h1 * d[c3 + b + 1]), e3);
            }
        }
        if (b < blocks) {
            long bo = base + (long) b * BYTES;
            ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, bo + 2, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, bo + 18, LE).convertShape(VectorOperators.B2S, S, 0);
            float h0 = half[w.get(I16, bo) & 0xffff];
            {
                int qi = (c0 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c0 + b]), a0);
            }
            {
                int qi = (c1 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a1 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c1 + b]), a1);
            }
            {
                int qi = (c2 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a2 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c2 + b]), a2);
            }
            {
                int qi = (c3 + b) * 32;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
                a3 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, h0 * d[c3 + b]), a3);
            }
        }
        out[o] = a0.add(e0).reduceLanes(VectorOperators.ADD);
        out[o + rows] = a1.add(e1).reduceLanes(VectorOperators.ADD);
        out[o + 2 * rows] = a2.add(e2).reduceLanes(VectorOperators.ADD);
        out[o + 3 * rows] = a3.add(e3).reduceLanes(VectorOperators.ADD);
    }


    /**
     * Σ over the row's blocks of d_w · d_x · Σ q_w·q_x: 16-bit products (exact, |q_w·q_x| ≤ 16256, a pair ≤ 32512),
     * converted to float per block and accumulated lane-wise; two blocks per iteration into two accumulators. The
     * block body is written out in place: a helper method taking vectors risks not being inlined (vectors boxed).
     */
    private float dot(long base, short[] q, float[] d, int b0) {
        MemorySegment w = data;
        float[] half = KernelSupport.HALF_TO_FLOAT;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * BYTES;
            int qi = (b0 + b) * 32;
            ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 18, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
            float s0 = half[w.get(I16, o) & 0xffff] * d[b0 + b];
            acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, s0), acc0);
            long o1 = o + BYTES;
            ShortVector u0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + 2, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector u1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + 18, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector p1 = u0.mul(ShortVector.fromArray(S, q, qi + 32)).add(u1.mul(ShortVector.fromArray(S, q, qi + 48)));
            float s1 = half[w.get(I16, o1) & 0xffff] * d[b0 + b + 1];
            acc1 = ((FloatVector) p1.convertShape(VectorOperators.S2F, F, 0)).fma(FloatVector.broadcast(F, s1), acc1);
        }
        if (b < blocks) {
            long o = base + (long) b * BYTES;
            int qi = (b0 + b) * 32;
            ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 18, LE).convertShape(VectorOperators.B2S, S, 0);
            ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
            float s0 = half[w.get(I16, o) & 0xffff] * d[b0 + b];
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
            ((FloatVector) ByteVector.fromMemorySegment(B, data, o + 2, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d).intoArray(dst, t);
            ((FloatVector) ByteVector.fromMemorySegment(B, data, o + 18, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d).intoArray(dst, t + 16);
        }
    }
}
