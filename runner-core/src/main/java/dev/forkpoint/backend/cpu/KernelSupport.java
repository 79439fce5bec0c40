package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Shared checks and constants of the CPU matrix kernels. */
final class KernelSupport {
    private KernelSupport() {}

    /*
     * The kernels' vector species, derived once from the platform's preferred vector width (512 bits with AVX-512,
     * 256 with AVX2, 128 with NEON or SSE) so that the JIT compiles them to native vector instructions at every width;
     * a species the hardware lacks would run as slow Java emulation. They are static final, hence constants to C2:
     * a kernel must name them directly, never take a species as a parameter (that defeats intrinsification).
     *
     * The float, int and short species all have the same lane count L, so that a lane-wise conversion between them
     * is one instruction; the byte species has L lanes too except at 128 bits, where L = 4 bytes is no vector shape:
     * there it has 8 lanes and a load is widened in BYTE_PARTS = 2 halves (convertShape part 0 and 1). Widths under
     * 128 bits (a JVM without usable vectors) fall back to the 128-bit species, which are correct but emulated; widths
     * over 512 bits use 512 (L = 16 divides the 32-value quant blocks).
     */

    /** Float species of the platform's preferred width, clamped to [128, 512] bits. */
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED.vectorBitSize() < 128 ? FloatVector.SPECIES_128
            : FloatVector.SPECIES_PREFERRED.vectorBitSize() > 512 ? FloatVector.SPECIES_512 : FloatVector.SPECIES_PREFERRED;
    /** Lanes of every kernel vector: 4, 8 or 16. */
    static final int L = F.length();
    /** Int species with L lanes (the width of F). */
    static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, VectorShape.forBitSize(32 * L));
    /** Short species with L lanes (half the width of F). */
    static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(16 * L));
    /** Byte species with max(L, 8) lanes (64 bits is the narrowest vector shape). */
    static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(8 * L, 64)));
    /*
     * The wide species of the 4-bit decode kernels: shorts filling a whole register (2L lanes, at most 16: a 4-bit
     * block holds 16 bytes), so that each multiply does twice the work of one in S. A wide short vector of products is
     * folded into WI ints by adding adjacent lane pairs (reinterpreted as ints: shift left then arithmetic right by 16,
     * plus arithmetic right by 16), converted to WF floats and added with one FMA. WL/2 = L up to 256 bits; at 512 bits
     * the wide species are 256-bit ones (a block's 16 bytes fill 16 shorts).
     */
    /** Lanes of the wide short species: 2L, at most 16. */
    static final int WL = Math.min(2 * L, 16);
    /** Short species with WL lanes. */
    static final VectorSpecies<Short> W = VectorSpecies.of(short.class, VectorShape.forBitSize(16 * WL));
    /** Byte species with WL lanes (what one wide load of packed bytes reads). */
    static final VectorSpecies<Byte> WB = VectorSpecies.of(byte.class, VectorShape.forBitSize(8 * WL));
    /** Int species with WL/2 lanes (the width of W). */
    static final VectorSpecies<Integer> WI = VectorSpecies.of(int.class, VectorShape.forBitSize(16 * WL));
    /** Float species with WL/2 lanes (the width of W). */
    static final VectorSpecies<Float> WF = VectorSpecies.of(float.class, VectorShape.forBitSize(16 * WL));
    /** Lanes of WI and WF. */
    static final int WFL = WL / 2;

    /**
     * As {@link #sum} for a vector of WF stored into {@code lanes} by the caller ({@code v.intoArray(lanes, 0)}): its
     * WFL lanes added in lane order. The vector is stored by the kernel itself (an intrinsic that is always inlined),
     * never passed to a helper: a kernel too large for C2 to inline more into (NodeCountInliningCutoff) would box
     * it — about 64 bytes allocated per row and token, 40 MB per decode step of a 1B model.
     */
    static float sumWide(float[] lanes) {
        float s = lanes[0];
        for (int i = 1; i < WFL; i++) s += lanes[i];
        return s;
    }

    /** Bytes one byte-vector load reads: L, or 8 at L = 4. */
    static final int BL = B.length();
    /** Parts of L lanes in one byte-vector load: 1, or 2 at L = 4. */
    static final int BYTE_PARTS = BL / L;

    /**
     * The sum of v's lanes, added in lane order. Not {@code reduceLanes(ADD)}: C2 may add a float vector's lanes in
     * another order than the interpreter (it does on AVX2), so a kernel's result would depend on whether the JIT had
     * compiled it yet, breaking the bit-identity of batched and single-row decode; this loop (unrolled, L lane
     * extracts) gives the same bits in every execution mode.
     */
    static float sum(FloatVector v) {
        float s = v.lane(0);
        for (int i = 1; i < L; i++) s += v.lane(i);
        return s;
    }

    /**
     * {@link #sum} of a vector of F the kernel stored into {@code lanes} itself ({@code v.intoArray(lanes, 0)}), for
     * kernels too large for C2 to inline a helper taking the vector (see {@link #sumWide}): the same bits.
     */
    static float sum(float[] lanes) {
        float s = lanes[0];
        for (int i = 1; i < L; i++) s += lanes[i];
        return s;
    }

    /**
     * Bytes j … j+L−1 of the packed run at w[at …] as L shorts, converted lane-wise by {@code conv} (B2S or
     * ZERO_EXTEND_B2S); j is a multiple of L. At L = 4 this loads the 8-byte half containing them and widens its
     * part (j / 4) mod 2. Called with constant j and conv (after unrolling), it folds to one load and one widening.
     */
    static ShortVector shorts(MemorySegment w, long at, int j, VectorOperators.Conversion<Byte, Short> conv) {
        if (BYTE_PARTS == 1) return (ShortVector) ByteVector.fromMemorySegment(B, w, at + j, LE).convertShape(conv, S, 0);
        return (ShortVector) ByteVector.fromMemorySegment(B, w, at + (j & -BL), LE).convertShape(conv, S, (j / L) & 1);
    }

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
     * at a time). The loop is row-outer, token-inner: a weight row (a few KB) is read from memory once and from the
     * L1 cache for the other tokens, so a batch shares the memory traffic of one token. Above it, the prefill GEMM
     * ({@link FloatGemm}), whose sums are ordered differently.
     */
    static final int DECODE_MAX_ROWS = dev.forkpoint.backend.Backend.MAX_DECODE_ROWS;

    /** Whether a multiply of n tokens takes the prefill GEMM path. */
    static boolean gemm(int n) {
        return n > DECODE_MAX_ROWS;
    }

    /** Task count for row-parallel loops: a few per thread so that a slow core does not hold the others up. */
    static int parts(WorkerPool pool) {
        return pool.threads() * 4;
    }

    static void checkMultiply(PackedMatrix m, int firstRow, int rowCount, float[] x, int n, float[] out) {
        if (n < 1) throw new IllegalArgumentException("token count must be at least 1, got " + n);
        if (firstRow < 0 || rowCount < 1 || (long) firstRow + rowCount > m.rows()) {
            throw new IndexOutOfBoundsException(rowCount + " rows from row " + firstRow + " of " + m.rows());
        }
        if ((long) n * m.cols() > x.length) {
            throw new IllegalArgumentException("input holds " + x.length + " floats, " + n + " × " + m.cols() + " needed");
        }
        if ((long) n * rowCount > out.length) {
            throw new IllegalArgumentException("output holds " + out.length + " floats, " + n + " × " + rowCount + " needed");
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
