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
 * A Q8_0 weight matrix read in place. Decode quantises the activations to Q8_0 (as llama.cpp does) and sums
 * d_w · d_x · Σ q_w·q_x per block, with exact 16-bit products; prefill goes through {@link FloatGemm} with the same
 * quantised activations.
 */
final class Q8_0Matrix implements PackedMatrix {
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final VectorSpecies<Byte> B = KernelSupport.B;
    private static final int BL = KernelSupport.BL;
    private static final int BYTE_PARTS = KernelSupport.BYTE_PARTS;
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;
    private static final int BYTES = 34;

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final int blocks;
    private final NativeKernels nativeKernels;   // null: the Java kernels below

    Q8_0Matrix(MemorySegment data, int rows, int cols) {
        this(data, rows, cols, null);
    }

    /** With {@code nativeKernels} (null: none), which then multiply every token count (decode and prefill). */
    Q8_0Matrix(MemorySegment data, int rows, int cols, NativeKernels nativeKernels) {
        KernelSupport.checkShape("Q8_0", data, rows, cols, 32, BYTES);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / 32;
        this.nativeKernels = nativeKernels;
    }

    public String typeName() { return "Q8_0"; }

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
        Q8Activations a = Q8Activations.q8_0(x, n, cols);
        if (nativeKernels != null) {   // decode and prefill alike: a token's results do not depend on n
            // slices in whole 16-row tiles (the VNNI kernel holds sixteen rows in its lanes)
            byte[] codes = a.codes();
            float[] scales = a.d();
            pool.runRanges(rowCount, KernelSupport.parts(pool), 16, (from, to) -> nativeKernels.q8_0(data,
                    (long) (firstRow + from) * blocks * BYTES, blocks, to - from, codes, scales, n, out, from, rowCount));
            return;
        }
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, firstRow, rowCount, a.dequantized(), n, out, pool);
            return;
        }
        short[] q = a.q();
        float[] d = a.d();
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            for (int r = firstRow + from; r < firstRow + to; r++) {
                long base = (long) r * blocks * BYTES;
                for (int t = 0; t < n; t++) out[t * rowCount + r - firstRow] = dot(base, q, d, t * blocks);
            }
        });
    }

    /**
     * Σ over the row's blocks of d_w · d_x · Σ q_w·q_x: per block, 32/(2L) lane-wise pair sums w0·q[qi …] +
     * w1·q[qi+L …] (the products of 2L consecutive quants folded to L lanes, exact in 16 bits: |Σ| ≤ 2·127·127),
     * each converted to float and added to the accumulator by an FMA with the block's scale; even and odd blocks go
     * to two accumulators.
     *
     * The per-lane work is written out in place, three times, rather than in a helper that takes or returns vectors:
     * at 128 bits (L = 4, e.g. NEON) the unrolled method grows past C2's inlining limits, a helper is then called
     * for real and its vectors are boxed on every call (~10× slower). The byte loads are {@link KernelSupport#shorts}
     * spelled out: bytes j … j+L−1 are part (j / L) mod BYTE_PARTS of the BL-byte load at j rounded down to BL.
     */
    private float dot(long base, short[] q, float[] d, int b0) {
        MemorySegment w = data;
        float[] half = KernelSupport.HALF_TO_FLOAT;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int b = 0;
        for (; b + 1 < blocks; b += 2) {
            long o = base + (long) b * BYTES;
            FloatVector s0 = FloatVector.broadcast(F, half[w.get(I16, o) & 0xffff] * d[b0 + b]);
            for (int j = 0; j < 32; j += 2 * L) {
                ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2 + (j & -BL), LE)
                        .convertShape(VectorOperators.B2S, S, (j / L) & (BYTE_PARTS - 1));
                ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2 + ((j + L) & -BL), LE)
                        .convertShape(VectorOperators.B2S, S, ((j + L) / L) & (BYTE_PARTS - 1));
                int qi = (b0 + b) * 32 + j;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + L)));
                acc0 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s0, acc0);
            }
            long o1 = o + BYTES;
            FloatVector s1 = FloatVector.broadcast(F, half[w.get(I16, o1) & 0xffff] * d[b0 + b + 1]);
            for (int j = 0; j < 32; j += 2 * L) {
                ShortVector u0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + 2 + (j & -BL), LE)
                        .convertShape(VectorOperators.B2S, S, (j / L) & (BYTE_PARTS - 1));
                ShortVector u1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o1 + 2 + ((j + L) & -BL), LE)
                        .convertShape(VectorOperators.B2S, S, ((j + L) / L) & (BYTE_PARTS - 1));
                int qi = (b0 + b + 1) * 32 + j;
                ShortVector p = u0.mul(ShortVector.fromArray(S, q, qi)).add(u1.mul(ShortVector.fromArray(S, q, qi + L)));
                acc1 = ((FloatVector) p.convertShape(VectorOperators.S2F, F, 0)).fma(s1, acc1);
            }
        }
        if (b < blocks) {
            long o = base + (long) b * BYTES;
            FloatVector s0 = FloatVector.broadcast(F, half[w.get(I16, o) & 0xffff] * d[b0 + b]);
            for (int j = 0; j < 32; j += 2 * L) {
                ShortVector w0 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2 + (j & -BL), LE)
                        .convertShape(VectorOperators.B2S, S, (j / L) & (BYTE_PARTS - 1));
                ShortVector w1 = (ShortVector) ByteVector.fromMemorySegment(B, w, o + 2 + ((j + L) & -BL), LE)
                        .convertShape(VectorOperators.B2S, S, ((j + L) / L) & (BYTE_PARTS - 1));
                int qi = (b0 + b) * 32 + j;
                ShortVector p = w0.mul(ShortVector.fromArray(S, q, qi)).add(w1.mul(ShortVector.fromArray(S, q, qi + L)));
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
            for (int j = 0; j < 32; j += L) {
                ((FloatVector) shorts(data, o + 2, j, VectorOperators.B2S).convertShape(VectorOperators.S2F, F, 0)).mul(d).intoArray(dst, t + j);
            }
        }
    }
}
