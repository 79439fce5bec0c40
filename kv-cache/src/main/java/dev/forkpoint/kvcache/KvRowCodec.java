package dev.forkpoint.kvcache;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Stores a row of floats as a {@link KvElementType} and reads it back: the one place that knows the byte layout of
 * every element type (the native attention kernel reads the same layout, see {@code native/cpu/forkpoint_attention.c}).
 *
 * <h2>Quantisation (written for this project; the block layouts are GGUF's)</h2>
 * Each block of 32 elements x[0 … 32) gets a scale d, rounded to binary16, and an integer q[i] per element; it reads
 * back as x̂[i] = d·q[i]. With a = max|x[i]| over the block:
 * <ul>
 * <li>Q8_0: d = a / 127, q[i] = round-to-nearest-even(x[i] / d) clamped to [−127, 127]. Per element
 *     |x − x̂| ≤ a/254 · (1 + 2⁻¹⁰) + 2⁻¹⁷ (half a step; the 2⁻¹⁰ covers d's rounding to binary16, the 2⁻¹⁷ a block so
 *     small that d is a binary16 subnormal).</li>
 * <li>Q4_0: d = m / −8, where m is the block's element of largest magnitude (the first, if tied) with its sign, so m
 *     is the end of the range [−8, 7]·d it can reach; q[i] = round-to-nearest-even(x[i] / d) clamped to [−8, 7]. Per
 *     element |x − x̂| ≤ |d|/2 · (1 + 2⁻¹⁰) + 2⁻¹⁷ where x/d ≤ 7.5, and ≤ |d| · (1 + 2⁻⁶) + 2⁻¹⁷ for the elements of the
 *     sign opposite to m with magnitude above 15/16 · a (they clamp at 7); |d| ≤ a/8 · (1 + 2⁻¹⁰).</li>
 * </ul>
 * A block of zeros stores d = 0 and reads back as zeros. A binary16 scale cannot exceed 65504: a block whose a would
 * need more (a &gt; 8.3·10⁶ for Q8_0) saturates. Reading back multiplies a binary16 value by an integer of at most 8
 * bits, which a float holds exactly: x̂ has the same bits however a kernel forms it (Java or native, any vector width).
 */
public final class KvRowCodec {
    /** Elements per quantised block. */
    public static final int BLOCK = 32;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
    private static final short F16_MAX = 0x7bff;

    private KvRowCodec() {}

    /** Stores {@code n} floats from {@code src[srcOff …]} as {@code type} at byte {@code dstOff} of {@code dst}. */
    public static void store(KvElementType type, float[] src, int srcOff, int n, MemorySegment dst, long dstOff) {
        type.rowBytes(n);   // refuses a row that is not whole blocks
        switch (type) {
            case F32 -> MemorySegment.copy(src, srcOff, dst, FLOAT, dstOff, n);
            case F16 -> {
                for (int e = 0; e < n; e++) dst.set(SHORT, dstOff + 2L * e, Float.floatToFloat16(src[srcOff + e]));
            }
            case Q8_0 -> {
                for (int b = 0; b < n / BLOCK; b++) storeQ8(src, srcOff + b * BLOCK, dst, dstOff + b * 34L);
            }
            case Q4_0 -> {
                for (int b = 0; b < n / BLOCK; b++) storeQ4(src, srcOff + b * BLOCK, dst, dstOff + b * 18L);
            }
        }
    }

    /** Reads {@code n} elements of {@code type} at byte {@code srcOff} of {@code src} into {@code out[outOff …]} as floats. */
    public static void load(KvElementType type, MemorySegment src, long srcOff, float[] out, int outOff, int n) {
        type.rowBytes(n);   // refuses a row that is not whole blocks
        switch (type) {
            case F32 -> MemorySegment.copy(src, FLOAT, srcOff, out, outOff, n);
            case F16 -> {
                for (int e = 0; e < n; e++) out[outOff + e] = Float.float16ToFloat(src.get(SHORT, srcOff + 2L * e));
            }
            case Q8_0 -> {
                for (int b = 0; b < n / BLOCK; b++) {
                    long at = srcOff + b * 34L;
                    float d = Float.float16ToFloat(src.get(SHORT, at));
                    int o = outOff + b * BLOCK;
                    for (int i = 0; i < BLOCK; i++) out[o + i] = d * src.get(ValueLayout.JAVA_BYTE, at + 2 + i);
                }
            }
            case Q4_0 -> {
                for (int b = 0; b < n / BLOCK; b++) {
                    long at = srcOff + b * 18L;
                    float d = Float.float16ToFloat(src.get(SHORT, at));
                    int o = outOff + b * BLOCK;
                    for (int j = 0; j < BLOCK / 2; j++) {
                        int packed = src.get(ValueLayout.JAVA_BYTE, at + 2 + j) & 0xff;
                        out[o + j] = d * ((packed & 0x0f) - 8);
                        out[o + j + BLOCK / 2] = d * ((packed >>> 4) - 8);
                    }
                }
            }
        }
    }

    /** The binary16 bits of a scale: {@code d} rounded to nearest, a scale past binary16's range saturated to 65504. */
    private static short scaleBits(float d) {
        short h = Float.floatToFloat16(d);
        if (Float.isInfinite(Float.float16ToFloat(h))) return (short) (d < 0 ? F16_MAX | 0x8000 : F16_MAX);
        return h;
    }

    private static int quantum(float x, float d, int lo, int hi) {
        if (d == 0) return 0;
        double q = Math.rint(x / d);   // the float quotient, rounded to the nearest integer (ties to even)
        return (int) Math.max(lo, Math.min(hi, q));
    }

    private static void storeQ8(float[] x, int off, MemorySegment dst, long at) {
        float a = 0;
        for (int i = 0; i < BLOCK; i++) a = Math.max(a, Math.abs(x[off + i]));
        short bits = scaleBits(a / 127f);
        float d = Float.float16ToFloat(bits);
        dst.set(SHORT, at, bits);
        for (int i = 0; i < BLOCK; i++) dst.set(ValueLayout.JAVA_BYTE, at + 2 + i, (byte) quantum(x[off + i], d, -127, 127));
    }

    private static void storeQ4(float[] x, int off, MemorySegment dst, long at) {
        float m = 0;
        for (int i = 0; i < BLOCK; i++) if (Math.abs(x[off + i]) > Math.abs(m)) m = x[off + i];
        short bits = scaleBits(m / -8f);
        float d = Float.float16ToFloat(bits);
        dst.set(SHORT, at, bits);
        for (int j = 0; j < BLOCK / 2; j++) {
            int lo = quantum(x[off + j], d, -8, 7) + 8, hi = quantum(x[off + j + BLOCK / 2], d, -8, 7) + 8;
            dst.set(ValueLayout.JAVA_BYTE, at + 2 + j, (byte) (lo | hi << 4));
        }
    }
}
