package dev.forkpoint.tensor;

import java.lang.foreign.MemorySegment;

/** Converts between floats and the packed block formats of {@link GgmlType}, following each format's definition. */
public final class Quantization {
    private Quantization() {}

    /**
     * Packs {@code count} floats from src[srcOff …] into {@code type} blocks at dst[dstOff …]. {@code count} must be a
     * multiple of the type's block size.
     */
    public static void quantize(GgmlType type, float[] src, int srcOff, int count, MemorySegment dst, long dstOff) {
        throw new UnsupportedOperationException("quantisation to " + type + " is not implemented yet");
    }

    /** Unpacks {@code count} values of {@code type} from src[srcOff …] (bytes) into dst[dstOff …]. */
    public static void dequantize(GgmlType type, MemorySegment src, long srcOff, float[] dst, int dstOff, int count) {
        throw new UnsupportedOperationException("dequantisation of " + type + " is not implemented yet");
    }
}
