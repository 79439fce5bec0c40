package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.MiniFloat;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static dev.forkpoint.backend.cpu.KernelSupport.LE;

/**
 * A matrix in one of MLX's floating-point formats ({@link FpTensor}: mxfp4, nvfp4, mxfp8) read in place: codes and
 * scale bytes stay where the tensor holds them (the mapped file).
 * <p><b>Decode</b> (n ≤ {@link KernelSupport#DECODE_MAX_ROWS}) keeps the activations as floats (no Q8 rounding as
 * in the integer kernels: MLX's own quantised matmul multiplies float activations, so the results agree with it to
 * float rounding) and computes per row and token Σ_c w_c · x_c with every weight w_c formed exactly, code value times
 * scale (a product exact in float), and added by a float FMA, lane c mod L into accumulator lane c mod L (per
 * register, per parity for fp4), the lanes then summed in lane order. The only difference from MLX's dequantised
 * values is the sign of a zero weight, which no sum sees.
 * <ul>
 * <li>fp4 (mxfp4, nvfp4): a row's 16-byte chunks (32 elements) are loaded as one byte vector; the low nibbles (the
 * even elements) and high nibbles (the odd ones) pick 2·value(code) ∈ {0, ±1, ±2, ±3, ±4, ±6, ±8, ±12} from a
 * 16-byte table with one byte shuffle each (at L = 16: one int permute each, on the chunk widened to ints once), are
 * widened to floats and multiplied by scale/2 (converted once per row
 * into a float scratch: 2^(e−128) for E8M0, value/2 for E4M3, both exact); the activations are stored de-interleaved
 * per 32 (evens, then odds) so that both halves meet plain vector loads. An nvfp4 chunk holds two groups: bytes
 * 0–7 and 8–15, so at 16 lanes the scale vector is a blend of the two; a row whose length is an odd multiple of 16
 * ends in a half chunk, summed in scalar code.</li>
 * <li>mxfp8: L code bytes are sign-extended to ints; exponent and mantissa move to float's bits 26–20 and the
 * exponent is rebiased by adding 120 (7 → 127), which is exact for normal e4m3 codes; an e4m3 subnormal (exponent 0,
 * m/8 · 2^−6) comes out as (1 + m/8) · 2^−7 and is corrected by one masked FMA, 2v − 2^−6 (exact); the sign goes to
 * bit 31, and the value is multiplied by the group's scale. No float subnormal is ever an operand: x86 cores take a
 * microcode assist for each (measured here: 12–25× slower with random codes).</li>
 * </ul>
 * Every token's dot products run the same code in the same order whatever the batch (row-outer, token-inner, the
 * row's bytes read from L1 for every token after the first), so a batch of decode rows gives bit-identical results
 * to one row at a time. As in {@link AffineMatrix}, per-lane work is written out in place (no helpers taking or
 * returning vectors).
 * <p><b>Prefill</b> goes through {@link FloatGemm} on the float activations, dequantising rows with
 * {@link #dequantizeRow}, vectorised and bit-identical to MLX's {@code dequantize}.
 */
final class FpMatrix implements PackedMatrix {
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final VectorSpecies<Integer> I = KernelSupport.I;
    private static final VectorSpecies<Byte> B = KernelSupport.B;
    private static final int L = KernelSupport.L;
    private static final int BL = KernelSupport.BL;
    private static final int BYTE_PARTS = KernelSupport.BYTE_PARTS;
    /** One fp4 chunk: 16 bytes, 32 elements. */
    private static final VectorSpecies<Byte> B16 = ByteVector.SPECIES_128;
    /** Float vectors per 16 values of a chunk half: 16 / L. */
    private static final int PARTS = 16 / L;

    /** 2·value of each E2M1 code, as signed bytes (exact small integers). */
    private static final byte[] E2M1_TWICE = new byte[16];
    /** 2·|value| of each E2M1 code (the sign goes on separately, so that −0 stays −0). */
    private static final byte[] E2M1_TWICE_MAGNITUDE = new byte[16];
    private static final ByteVector TWICE;
    private static final ByteVector TWICE_MAGNITUDE;
    /** The same 16 values as ints (only used at L = 16, where they fill one int vector). */
    private static final IntVector TWICE_INTS;
    /** value(scale byte) / 2 for E8M0 and E4M3 scales, and value for E8M0 (exact). */
    private static final float[] E8M0_HALF = new float[256], E4M3_HALF = new float[256], E8M0_VALUE = new float[256];
    /** Lanes 8 … 15 (only used at L = 16): the second group of an nvfp4 chunk. */
    private static final VectorMask<Float> HIGH_EIGHT = VectorMask.fromLong(F, L == 16 ? 0xff00L : 0L);

    static {
        for (int c = 0; c < 16; c++) {
            E2M1_TWICE[c] = (byte) (2 * MiniFloat.E2M1.value(c));
            E2M1_TWICE_MAGNITUDE[c] = (byte) Math.abs(E2M1_TWICE[c]);
        }
        TWICE = ByteVector.fromArray(B16, E2M1_TWICE, 0);
        TWICE_MAGNITUDE = ByteVector.fromArray(B16, E2M1_TWICE_MAGNITUDE, 0);
        int[] ints = new int[Math.max(16, L)];
        for (int c = 0; c < 16; c++) ints[c] = E2M1_TWICE[c];
        TWICE_INTS = IntVector.fromArray(I, ints, 0);
        for (int b = 0; b < 256; b++) {
            E8M0_VALUE[b] = MiniFloat.E8M0.value(b);
            E8M0_HALF[b] = E8M0_VALUE[b] * 0.5f;
            E4M3_HALF[b] = MiniFloat.E4M3.value(b) * 0.5f;
        }
    }

    /** Output lanes 0 … L−1 of interleaving a (even elements) with b (odd elements): a0 b0 a1 b1 …; and lanes L … 2L−1. */
    private static final VectorShuffle<Float> ZIP_LOW = VectorShuffle.fromOp(F, j -> (j & 1) == 0 ? j / 2 : L + j / 2);
    private static final VectorShuffle<Float> ZIP_HIGH = VectorShuffle.fromOp(F, j -> (j & 1) == 0 ? L / 2 + j / 2 : L + L / 2 + j / 2);

    private final MemorySegment packed;
    private final MemorySegment scales;
    private final FpFormat format;
    private final int rows;
    private final int cols;
    private final int groups;
    private final long rowBytes;

    FpMatrix(FpTensor t) {
        this.packed = t.packed();
        this.scales = t.scales();
        this.format = t.format();
        this.rows = t.rows();
        this.cols = t.cols();
        this.groups = t.groupsPerRow();
        this.rowBytes = format.packedBytesPerRow(cols);
    }

    public String typeName() { return format.typeName(); }
    public int rows() { return rows; }
    public int cols() { return cols; }
    public long rowBytes() { return rowBytes + groups; }

    public void multiplyRows(int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool) {
        KernelSupport.checkMultiply(this, firstRow, rowCount, x, n, out);
        if (KernelSupport.gemm(n)) {
            FloatGemm.multiply(this, firstRow, rowCount, x, n, out, pool);
            return;
        }
        FpFormat f = format;
        float[] xs = f == FpFormat.MXFP8 ? x : deinterleave(x, n, cols);
        pool.runRanges(rowCount, KernelSupport.parts(pool), 8, (from, to) -> {
            float[] sc = new float[groups];
            for (int r = firstRow + from; r < firstRow + to; r++) {
                rowScales(r, sc);
                for (int t = 0; t < n; t++) {
                    out[t * rowCount + r - firstRow] = switch (f) {
                        case MXFP4 -> dotMx4(r, xs, t, sc);
                        case NVFP4 -> dotNv4(r, xs, t, sc);
                        case MXFP8 -> dot8(r, xs, t, sc);
                    };
                }
            }
        });
    }

    /**
     * The fp4 kernels' activation order: per token and 32 values, the 16 even-indexed ones, then the 16 odd-indexed
     * ones; an nvfp4 row's last 16 values (when cols is an odd multiple of 16) stay in order.
     */
    private static float[] deinterleave(float[] x, int n, int cols) {
        float[] p = new float[n * cols];
        for (int t = 0; t < n; t++) {
            int o = t * cols, c = 0;
            for (; c + 32 <= cols; c += 32) {
                for (int i = 0; i < 16; i++) {
                    p[o + c + i] = x[o + c + 2 * i];
                    p[o + c + 16 + i] = x[o + c + 2 * i + 1];
                }
            }
            System.arraycopy(x, o + c, p, o + c, cols - c);
        }
        return p;
    }

    /** Row r's scales as the kernels use them: value/2 for the fp4 formats, value for mxfp8. */
    private void rowScales(int r, float[] sc) {
        float[] table = switch (format) {
            case MXFP4 -> E8M0_HALF;
            case NVFP4 -> E4M3_HALF;
            case MXFP8 -> E8M0_VALUE;
        };
        long g0 = (long) r * groups;
        for (int g = 0; g < groups; g++) sc[g] = table[scales.get(ValueLayout.JAVA_BYTE, g0 + g) & 0xff];
    }

    /**
     * mxfp4: one group per 16-byte chunk, one broadcast scale; even and odd halves in two accumulators. At L = 16 the
     * chunk's bytes are widened to ints once and the nibbles looked up in an int table (one permute each), which is
     * cheaper there than byte shuffles and byte-to-float widening; the values and their order are the same.
     */
    private float dotMx4(int r, float[] xs, int t, float[] sh) {
        MemorySegment w = packed;
        long base = r * rowBytes;
        int x0 = t * cols;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int chunks = cols / 32;
        for (int c = 0; c < chunks; c++) {
            FloatVector s = FloatVector.broadcast(F, sh[c]);
            int xo = x0 + 32 * c;
            if (L == 16) {
                IntVector i = (IntVector) ByteVector.fromMemorySegment(B16, w, base + 16L * c, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                FloatVector wl = ((FloatVector) i.and(0xf).selectFrom(TWICE_INTS).convert(VectorOperators.I2F, 0)).mul(s);
                acc0 = wl.fma(FloatVector.fromArray(F, xs, xo), acc0);
                FloatVector wh = ((FloatVector) i.lanewise(VectorOperators.LSHR, 4).selectFrom(TWICE_INTS).convert(VectorOperators.I2F, 0)).mul(s);
                acc1 = wh.fma(FloatVector.fromArray(F, xs, xo + 16), acc1);
                continue;
            }
            ByteVector bytes = ByteVector.fromMemorySegment(B16, w, base + 16L * c, LE);
            ByteVector lo = bytes.and((byte) 0x0f).selectFrom(TWICE);
            ByteVector hi = bytes.lanewise(VectorOperators.LSHR, 4).selectFrom(TWICE);
            for (int p = 0; p < PARTS; p++) {
                FloatVector wl = ((FloatVector) lo.convertShape(VectorOperators.B2F, F, p)).mul(s);
                acc0 = wl.fma(FloatVector.fromArray(F, xs, xo + p * L), acc0);
                FloatVector wh = ((FloatVector) hi.convertShape(VectorOperators.B2F, F, p)).mul(s);
                acc1 = wh.fma(FloatVector.fromArray(F, xs, xo + 16 + p * L), acc1);
            }
        }
        return KernelSupport.sum(acc0.add(acc1));
    }

    /** nvfp4: two groups per 16-byte chunk (bytes 0–7 and 8–15: a blended scale vector at L = 16), otherwise as {@link #dotMx4}. */
    private float dotNv4(int r, float[] xs, int t, float[] sh) {
        MemorySegment w = packed;
        long base = r * rowBytes;
        int x0 = t * cols;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int chunks = cols / 32;
        for (int c = 0; c < chunks; c++) {
            float sa = sh[2 * c], sb = sh[2 * c + 1];
            int xo = x0 + 32 * c;
            if (L == 16) {
                FloatVector s = FloatVector.broadcast(F, sa).blend(sb, HIGH_EIGHT);
                IntVector i = (IntVector) ByteVector.fromMemorySegment(B16, w, base + 16L * c, LE)
                        .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                FloatVector wl = ((FloatVector) i.and(0xf).selectFrom(TWICE_INTS).convert(VectorOperators.I2F, 0)).mul(s);
                acc0 = wl.fma(FloatVector.fromArray(F, xs, xo), acc0);
                FloatVector wh = ((FloatVector) i.lanewise(VectorOperators.LSHR, 4).selectFrom(TWICE_INTS).convert(VectorOperators.I2F, 0)).mul(s);
                acc1 = wh.fma(FloatVector.fromArray(F, xs, xo + 16), acc1);
                continue;
            }
            ByteVector bytes = ByteVector.fromMemorySegment(B16, w, base + 16L * c, LE);
            ByteVector lo = bytes.and((byte) 0x0f).selectFrom(TWICE);
            ByteVector hi = bytes.lanewise(VectorOperators.LSHR, 4).selectFrom(TWICE);
            for (int p = 0; p < PARTS; p++) {
                FloatVector s = L == 16 ? FloatVector.broadcast(F, sa).blend(sb, HIGH_EIGHT)
                        : FloatVector.broadcast(F, p * L < 8 ? sa : sb);
                FloatVector wl = ((FloatVector) lo.convertShape(VectorOperators.B2F, F, p)).mul(s);
                acc0 = wl.fma(FloatVector.fromArray(F, xs, xo + p * L), acc0);
                FloatVector wh = ((FloatVector) hi.convertShape(VectorOperators.B2F, F, p)).mul(s);
                acc1 = wh.fma(FloatVector.fromArray(F, xs, xo + 16 + p * L), acc1);
            }
        }
        float sum = KernelSupport.sum(acc0.add(acc1));
        if (chunks * 32 < cols) sum += tail16(base + 16L * chunks, xs, x0 + 32 * chunks, sh[2 * chunks]);
        return sum;
    }

    /** An nvfp4 row's last group when cols is an odd multiple of 16: 8 bytes, 16 values in order, summed in order. */
    private float tail16(long at, float[] xs, int xo, float halfScale) {
        float sum = 0;
        for (int j = 0; j < 8; j++) {
            int b = packed.get(ValueLayout.JAVA_BYTE, at + j);
            sum = Math.fma(E2M1_TWICE[b & 0xf] * halfScale, xs[xo + 2 * j], sum);
            sum = Math.fma(E2M1_TWICE[(b >> 4) & 0xf] * halfScale, xs[xo + 2 * j + 1], sum);
        }
        return sum;
    }

    /** mxfp8: per group of 32 bytes, 32/L vectors of codes made floats exactly, times the scale, FMA'd with x. */
    private float dot8(int r, float[] x, int t, float[] sc) {
        MemorySegment w = packed;
        long base = r * rowBytes;
        int x0 = t * cols;
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        for (int g = 0; g < groups; g++) {
            long o = base + 32L * g;
            FloatVector s = FloatVector.broadcast(F, sc[g]);
            int xo = x0 + 32 * g;
            for (int j = 0; j < 32; j += 2 * L) {
                IntVector i0 = (IntVector) ByteVector.fromMemorySegment(B, w, o + (j & -BL), LE)
                        .convertShape(VectorOperators.B2I, I, (j / L) & (BYTE_PARTS - 1));
                IntVector m0 = i0.lanewise(VectorOperators.LSHL, 20).and(0x07F00000);
                FloatVector w0 = m0.add(120 << 23).reinterpretAsFloats()
                        .lanewise(VectorOperators.FMA, 2f, -0x1p-6f, m0.compare(VectorOperators.LT, 0x00800000).cast(F))
                        .reinterpretAsInts().or(i0.and(0x80000000)).reinterpretAsFloats().mul(s);
                acc0 = w0.fma(FloatVector.fromArray(F, x, xo + j), acc0);
                IntVector i1 = (IntVector) ByteVector.fromMemorySegment(B, w, o + ((j + L) & -BL), LE)
                        .convertShape(VectorOperators.B2I, I, ((j + L) / L) & (BYTE_PARTS - 1));
                IntVector m1 = i1.lanewise(VectorOperators.LSHL, 20).and(0x07F00000);
                FloatVector w1 = m1.add(120 << 23).reinterpretAsFloats()
                        .lanewise(VectorOperators.FMA, 2f, -0x1p-6f, m1.compare(VectorOperators.LT, 0x00800000).cast(F))
                        .reinterpretAsInts().or(i1.and(0x80000000)).reinterpretAsFloats().mul(s);
                acc1 = w1.fma(FloatVector.fromArray(F, x, xo + j + L), acc1);
            }
        }
        return KernelSupport.sum(acc0.add(acc1));
    }

    /**
     * value(code) · value(scale) for every element of the row, bit for bit what MLX's {@code dequantize} gives (what
     * prefill's {@link FloatGemm} and embedding lookups read). fp4: 2·|value| from the table, times scale/2, the
     * code's sign bit then flipped into the product's (so that −0 · s is −0 as in MLX), even and odd halves
     * interleaved back with two shuffles; mxfp8 as in the decode kernel.
     */
    public void dequantizeRow(int row, float[] dst, int dstOff) {
        KernelSupport.checkRow(this, row, dst, dstOff);
        long base = (long) row * rowBytes, g0 = (long) row * groups;
        if (format == FpFormat.MXFP8) {
            for (int g = 0; g < groups; g++) {
                float s = E8M0_VALUE[scales.get(ValueLayout.JAVA_BYTE, g0 + g) & 0xff];
                long o = base + 32L * g;
                for (int j = 0; j < 32; j += L) {
                    IntVector i = (IntVector) ByteVector.fromMemorySegment(B, packed, o + (j & -BL), LE)
                            .convertShape(VectorOperators.B2I, I, (j / L) & (BYTE_PARTS - 1));
                    IntVector m = i.lanewise(VectorOperators.LSHL, 20).and(0x07F00000);
                    m.add(120 << 23).reinterpretAsFloats()
                            .lanewise(VectorOperators.FMA, 2f, -0x1p-6f, m.compare(VectorOperators.LT, 0x00800000).cast(F))
                            .reinterpretAsInts().or(i.and(0x80000000)).reinterpretAsFloats().mul(s)
                            .intoArray(dst, dstOff + 32 * g + j);
                }
            }
            return;
        }
        float[] half = format == FpFormat.MXFP4 ? E8M0_HALF : E4M3_HALF;
        boolean nv = format == FpFormat.NVFP4;
        int chunks = cols / 32;
        for (int c = 0; c < chunks; c++) {
            ByteVector bytes = ByteVector.fromMemorySegment(B16, packed, base + 16L * c, LE);
            ByteVector lo = bytes.and((byte) 0x0f), hi = bytes.lanewise(VectorOperators.LSHR, 4);
            ByteVector mlo = lo.selectFrom(TWICE_MAGNITUDE), mhi = hi.selectFrom(TWICE_MAGNITUDE);
            float sa = half[scales.get(ValueLayout.JAVA_BYTE, g0 + (nv ? 2L * c : c)) & 0xff];
            float sb = nv ? half[scales.get(ValueLayout.JAVA_BYTE, g0 + 2L * c + 1) & 0xff] : sa;
            for (int p = 0; p < PARTS; p++) {
                FloatVector s = L == 16 ? FloatVector.broadcast(F, sa).blend(sb, HIGH_EIGHT)
                        : FloatVector.broadcast(F, p * L < 8 ? sa : sb);
                IntVector signLo = ((IntVector) lo.convertShape(VectorOperators.B2I, I, p)).and(8).lanewise(VectorOperators.LSHL, 28);
                IntVector signHi = ((IntVector) hi.convertShape(VectorOperators.B2I, I, p)).and(8).lanewise(VectorOperators.LSHL, 28);
                FloatVector even = ((FloatVector) mlo.convertShape(VectorOperators.B2F, F, p)).mul(s)
                        .reinterpretAsInts().lanewise(VectorOperators.XOR, signLo).reinterpretAsFloats();
                FloatVector odd = ((FloatVector) mhi.convertShape(VectorOperators.B2F, F, p)).mul(s)
                        .reinterpretAsInts().lanewise(VectorOperators.XOR, signHi).reinterpretAsFloats();
                int e = dstOff + 32 * c + 2 * p * L;
                even.rearrange(ZIP_LOW, odd).intoArray(dst, e);
                even.rearrange(ZIP_HIGH, odd).intoArray(dst, e + L);
            }
        }
        if (chunks * 32 < cols) {   // nvfp4, cols an odd multiple of 16: the last group in scalar code
            float s = MiniFloat.E4M3.value(scales.get(ValueLayout.JAVA_BYTE, g0 + groups - 1));
            for (int c = chunks * 32; c < cols; c++) {
                int code = packed.get(ValueLayout.JAVA_BYTE, base + c / 2) >> (4 * (c & 1));
                dst[dstOff + c] = MiniFloat.E2M1.value(code) * s;
            }
        }
    }
}
