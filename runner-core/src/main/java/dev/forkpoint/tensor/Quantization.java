package dev.forkpoint.tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Converts between floats and the packed block formats of {@link GgmlType}, following each format's definition
 * (GGML/GGUF, little-endian). Quantisers for Q8_0 and Q4_0 reproduce llama.cpp's reference rounding bit for bit;
 * those for Q4_K and Q6_K are simple correct encoders of the formats (not llama.cpp's search-based ones).
 */
public final class Quantization {
    private Quantization() {}

    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Packs {@code count} floats from src[srcOff …] into {@code type} blocks at dst[dstOff …]. {@code count} must be a
     * multiple of the type's block size.
     */
    public static void quantize(GgmlType type, float[] src, int srcOff, int count, MemorySegment dst, long dstOff) {
        checkRange(type, count, dst, dstOff, src.length - srcOff);
        switch (type) {
            case F32 -> MemorySegment.copy(src, srcOff, dst, F32, dstOff, count);
            case F16 -> {
                for (int i = 0; i < count; i++) dst.set(I16, dstOff + 2L * i, Float.floatToFloat16(src[srcOff + i]));
            }
            case BF16 -> {
                for (int i = 0; i < count; i++) dst.set(I16, dstOff + 2L * i, BFloat16.fromFloat(src[srcOff + i]));
            }
            case Q8_0 -> Q8_0Codec.quantize(src, srcOff, count, dst, dstOff);
            case Q4_0 -> Q4_0Codec.quantize(src, srcOff, count, dst, dstOff);
            case Q4_K -> Q4KCodec.quantize(src, srcOff, count, dst, dstOff);
            case Q6_K -> Q6KCodec.quantize(src, srcOff, count, dst, dstOff);
            default -> throw unsupported("quantisation to", type);
        }
    }

    /** Unpacks {@code count} values of {@code type} from src[srcOff …] (bytes) into dst[dstOff …]. */
    public static void dequantize(GgmlType type, MemorySegment src, long srcOff, float[] dst, int dstOff, int count) {
        checkRange(type, count, src, srcOff, dst.length - dstOff);
        switch (type) {
            case F32 -> MemorySegment.copy(src, F32, srcOff, dst, dstOff, count);
            case F16 -> {
                for (int i = 0; i < count; i++) dst[dstOff + i] = Float.float16ToFloat(src.get(I16, srcOff + 2L * i));
            }
            case BF16 -> {
                for (int i = 0; i < count; i++) dst[dstOff + i] = BFloat16.toFloat(src.get(I16, srcOff + 2L * i));
            }
            case Q8_0 -> Q8_0Codec.dequantize(src, srcOff, dst, dstOff, count);
            case Q4_0 -> Q4_0Codec.dequantize(src, srcOff, dst, dstOff, count);
            case Q4_K -> Q4KCodec.dequantize(src, srcOff, dst, dstOff, count);
            case Q6_K -> Q6KCodec.dequantize(src, srcOff, dst, dstOff, count);
            default -> throw unsupported("dequantisation of", type);
        }
    }

    private static void checkRange(GgmlType type, int count, MemorySegment seg, long off, int floatsAvailable) {
        if (count < 0 || count % type.blockSize() != 0) {
            throw new IllegalArgumentException(type + " needs a multiple of " + type.blockSize() + " values, got " + count);
        }
        if (count > floatsAvailable) {
            throw new IndexOutOfBoundsException(count + " values do not fit the float array");
        }
        long bytes = type.bytesFor(count);
        if (off < 0 || off + bytes > seg.byteSize()) {
            throw new IndexOutOfBoundsException(count + " " + type + " values (" + bytes + " bytes) at offset " + off
                    + " do not fit a segment of " + seg.byteSize() + " bytes");
        }
    }

    private static UnsupportedOperationException unsupported(String what, GgmlType type) {
        return new UnsupportedOperationException(what + " " + type + " is not supported; supported types: "
                + GgmlType.supportedNames());
    }

    /** llama.cpp's nearest_int: round to nearest, ties to even (valid for |v| &lt; 2^22). */
    static int nearestInt(float v) {
        return (int) Math.rint(v);
    }

    /** C's roundf: round to nearest, ties away from zero. */
    static int roundAway(float v) {
        double r = Math.floor(Math.abs((double) v) + 0.5);
        return (int) (v < 0 ? -r : r);
    }
}
