package dev.forkpoint.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Shared checks and constants of the CPU matrix kernels. */
final class KernelSupport {
    private KernelSupport() {}

    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /**
     * f16 bits (as an unsigned index) → float, for the per-block scales of the integer kernels: one load instead of
     * a conversion in the inner loop.
     */
    static final float[] HALF_TO_FLOAT = new float[65536];

    static {
        for (int i = 0; i < HALF_TO_FLOAT.length; i++) HALF_TO_FLOAT[i] = Float.float16ToFloat((short) i);
    }

    /**
     * Up to this many tokens a multiply runs the decode kernel: every token's dot products in exactly the arithmetic
     * order of a one-token multiply (so a batch of decode rows gives bit-identical results to running the rows one
     * at a time), with each weight block decoded once per group of {@link #DECODE_GROUP} tokens. Above it, the
     * prefill GEMM ({@link FloatGemm}), whose sums are ordered differently.
     */
    static final int DECODE_MAX_ROWS = 16;

    /** Tokens whose dot products the multi-row decode kernels compute together from one read of a weight block. */
    static final int DECODE_GROUP = 4;

    /** Whether a multiply of n tokens takes the prefill GEMM path. */
    static boolean gemm(int n) {
        return n > DECODE_MAX_ROWS;
    }

    /** Task count for row-parallel loops: a few per thread so that a slow core does not hold the others up. */
    static int parts(WorkerPool pool) {
        return pool.threads() * 4;
    }

    static void checkMultiply(PackedMatrix m, float[] x, int n, float[] out) {
        if (n < 1) throw new IllegalArgumentException("token count must be at least 1, got " + n);
        if ((long) n * m.cols() > x.length) {
            throw new IllegalArgumentException("input holds " + x.length + " floats, " + n + " × " + m.cols() + " needed");
        }
        if ((long) n * m.rows() > out.length) {
            throw new IllegalArgumentException("output holds " + out.length + " floats, " + n + " × " + m.rows() + " needed");
        }
    }

    static void checkRow(PackedMatrix m, int row, float[] dst, int dstOff) {
        if (row < 0 || row >= m.rows()) throw new IndexOutOfBoundsException("row " + row + " of " + m.rows());
        if (dstOff < 0 || dstOff + (long) m.cols() > dst.length) {
            throw new IndexOutOfBoundsException("row of " + m.cols() + " floats at " + dstOff + " exceeds " + dst.length);
        }
    }

    /** Checks that a tensor's data holds exactly rows × cols elements of its block type. */
    static void checkShape(String type, MemorySegment data, int rows, int cols, int blockSize, int blockBytes) {
        if (cols % blockSize != 0) {
            throw new IllegalArgumentException(type + " rows must be a multiple of " + blockSize + " values, got " + cols);
        }
        long need = (long) rows * (cols / blockSize) * blockBytes;
        if (data.byteSize() < need) {
            throw new IllegalArgumentException(type + " matrix " + rows + "×" + cols + " needs " + need
                    + " bytes, the data has " + data.byteSize());
        }
    }
}
