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
        if (n >= KernelSupport.PREFILL_MIN_TOKENS) {
            FloatGemm.multiply(this, a.dequantized(), n, out, pool);
            return;
        }
        short[] q = a.q();
        float[] d = a.d();
        pool.runRanges(rows, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = from; r < to; r++) {
                for (int t = 0; t < n; t++) out[t * rows + r] = dot((long) r * blocks * BYTES, q, d, t * blocks);
            }
        });
    }

    private float dot(long base, short[] q, float[] d, int b0) {
        MemorySegment w = data;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * BYTES;
            int qi = (b0 + b) * 32;
            acc0 = block(w, o, q, qi, d[b0 + b], acc0);
            acc1 = block(w, o + BYTES, q, qi + 32, d[b0 + b + 1], acc1);
        }
        if (b < blocks) acc0 = block(w, base + (long) b * BYTES, q, (b0 + b) * 32, d[b0 + b], acc0);
        return acc0.add(acc1).reduceLanes(VectorOperators.ADD);
    }

    private static FloatVector block(MemorySegment w, long o, short[] q, int qi, float dx, FloatVector acc) {
        ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2, LE).convertShape(VectorOperators.B2S, S, 0);
        ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 18, LE).convertShape(VectorOperators.B2S, S, 0);
        ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + 16)));
        FloatVector f = (FloatVector) p.convertShape(VectorOperators.S2F, F, 0);
        float scale = Float.float16ToFloat(w.get(I16, o)) * dx;
        return f.fma(FloatVector.broadcast(F, scale), acc);
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
