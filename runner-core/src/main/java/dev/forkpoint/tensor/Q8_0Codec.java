package dev.forkpoint.tensor;

import java.lang.foreign.MemorySegment;

/** Q8_0: blocks of 32 values, each an f16 scale d followed by 32 int8 quants; value = q · d. */
final class Q8_0Codec {
    private Q8_0Codec() {}

    static final int BLOCK = 32;
    static final int BYTES = 34;

    /** llama.cpp's quantize_row_q8_0_ref: d = amax / 127, q = roundf(x / d) (computed as x · (1/d)). */
    static void quantize(float[] src, int srcOff, int count, MemorySegment dst, long dstOff) {
        for (int b = 0; b < count / BLOCK; b++) {
            int s = srcOff + b * BLOCK;
            long o = dstOff + (long) b * BYTES;
            float amax = 0;
            for (int j = 0; j < BLOCK; j++) amax = Math.max(amax, Math.abs(src[s + j]));
            float d = amax / 127f;
            float id = d != 0 ? 1f / d : 0f;
            dst.set(Quantization.I16, o, Float.floatToFloat16(d));
            for (int j = 0; j < BLOCK; j++) dst.set(java.lang.foreign.ValueLayout.JAVA_BYTE, o + 2 + j, (byte) Quantization.roundAway(src[s + j] * id));
        }
    }

    static void dequantize(MemorySegment src, long srcOff, float[] dst, int dstOff, int count) {
        for (int b = 0; b < count / BLOCK; b++) {
            long o = srcOff + (long) b * BYTES;
            float d = Float.float16ToFloat(src.get(Quantization.I16, o));
            int t = dstOff + b * BLOCK;
            for (int j = 0; j < BLOCK; j++) dst[t + j] = src.get(java.lang.foreign.ValueLayout.JAVA_BYTE, o + 2 + j) * d;
        }
    }
}
