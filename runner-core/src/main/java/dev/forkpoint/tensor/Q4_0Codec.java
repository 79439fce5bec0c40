package dev.forkpoint.tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Q4_0: blocks of 32 values, each an f16 scale d followed by 16 bytes; byte j holds element j in its low nibble and
 * element j + 16 in its high nibble; value = (q − 8) · d.
 */
final class Q4_0Codec {
    private Q4_0Codec() {}

    static final int BLOCK = 32;
    static final int BYTES = 18;

    /** llama.cpp's quantize_row_q4_0_ref: d = max / −8 (max = the value of largest magnitude), q = min(15, (int8)(x/d + 8.5)). */
    static void quantize(float[] src, int srcOff, int count, MemorySegment dst, long dstOff) {
        for (int b = 0; b < count / BLOCK; b++) {
            int s = srcOff + b * BLOCK;
            long o = dstOff + (long) b * BYTES;
            float amax = 0, max = 0;
            for (int j = 0; j < BLOCK; j++) {
                float v = src[s + j];
                if (amax < Math.abs(v)) {
                    amax = Math.abs(v);
                    max = v;
                }
            }
            float d = max / -8f;
            float id = d != 0 ? 1f / d : 0f;
            dst.set(Quantization.I16, o, Float.floatToFloat16(d));
            for (int j = 0; j < 16; j++) {
                int q0 = Math.min(15, (byte) (int) (src[s + j] * id + 8.5f));
                int q1 = Math.min(15, (byte) (int) (src[s + 16 + j] * id + 8.5f));
                dst.set(ValueLayout.JAVA_BYTE, o + 2 + j, (byte) (q0 | (q1 << 4)));
            }
        }
    }

    static void dequantize(MemorySegment src, long srcOff, float[] dst, int dstOff, int count) {
        for (int b = 0; b < count / BLOCK; b++) {
            long o = srcOff + (long) b * BYTES;
            float d = Float.float16ToFloat(src.get(Quantization.I16, o));
            int t = dstOff + b * BLOCK;
            for (int j = 0; j < 16; j++) {
                int q = src.get(ValueLayout.JAVA_BYTE, o + 2 + j) & 0xff;
                dst[t + j] = ((q & 0xf) - 8) * d;
                dst[t + 16 + j] = ((q >>> 4) - 8) * d;
            }
        }
    }
}
