package dev.forkpoint.tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Q4_K: super-blocks of 256 values (144 bytes): f16 d, f16 dmin, 12 bytes packing eight 6-bit scales and eight 6-bit
 * mins (one pair per sub-block of 32), then 128 bytes of nibbles. Each 64-value chunk k uses bytes 32k … 32k+31: the
 * low nibbles are sub-block 2k, the high nibbles sub-block 2k+1. value = d·scale_j·q − dmin·min_j.
 */
final class Q4KCodec {
    private Q4KCodec() {}

    static final int BLOCK = 256;
    static final int BYTES = 144;

    /** Scale (in the low 8 bits) and min (next 8 bits) of sub-block j from the 12 packed bytes at {@code off}. */
    static int scaleMin(MemorySegment seg, long off, int j) {
        int sc, m;
        if (j < 4) {
            sc = u8(seg, off + j) & 63;
            m = u8(seg, off + j + 4) & 63;
        } else {
            sc = (u8(seg, off + j + 4) & 0xf) | ((u8(seg, off + j - 4) >>> 6) << 4);
            m = (u8(seg, off + j + 4) >>> 4) | ((u8(seg, off + j) >>> 6) << 4);
        }
        return sc | (m << 8);
    }

    private static int u8(MemorySegment seg, long off) {
        return seg.get(ValueLayout.JAVA_BYTE, off) & 0xff;
    }

    static void dequantize(MemorySegment src, long srcOff, float[] dst, int dstOff, int count) {
        for (int b = 0; b < count / BLOCK; b++) {
            long o = srcOff + (long) b * BYTES;
            float d = Float.float16ToFloat(src.get(Quantization.I16, o));
            float dmin = Float.float16ToFloat(src.get(Quantization.I16, o + 2));
            int t = dstOff + b * BLOCK;
            for (int k = 0; k < 4; k++) {
                int sm0 = scaleMin(src, o + 4, 2 * k), sm1 = scaleMin(src, o + 4, 2 * k + 1);
                float d0 = d * (sm0 & 0xff), m0 = dmin * (sm0 >>> 8);
                float d1 = d * (sm1 & 0xff), m1 = dmin * (sm1 >>> 8);
                for (int l = 0; l < 32; l++) {
                    int q = u8(src, o + 16 + 32 * k + l);
                    dst[t + 64 * k + l] = d0 * (q & 0xf) - m0;
                    dst[t + 64 * k + 32 + l] = d1 * (q >>> 4) - m1;
                }
            }
        }
    }

    /**
     * A straightforward encoder: per sub-block, min = min(0, smallest value) and step = (max − min) / 15; the steps and
     * mins are quantised to 6 bits against the super-block's largest, then each value to the nearest nibble.
     */
    static void quantize(float[] src, int srcOff, int count, MemorySegment dst, long dstOff) {
        float[] step = new float[8];
        float[] mins = new float[8];
        int[] sc = new int[8];
        int[] mq = new int[8];
        for (int b = 0; b < count / BLOCK; b++) {
            int s = srcOff + b * BLOCK;
            long o = dstOff + (long) b * BYTES;
            float maxStep = 0, maxMin = 0;
            for (int j = 0; j < 8; j++) {
                float lo = 0, hi = 0;
                for (int l = 0; l < 32; l++) {
                    lo = Math.min(lo, src[s + 32 * j + l]);
                    hi = Math.max(hi, src[s + 32 * j + l]);
                }
                step[j] = (hi - lo) / 15f;
                mins[j] = -lo;
                maxStep = Math.max(maxStep, step[j]);
                maxMin = Math.max(maxMin, mins[j]);
            }
            short dh = Float.floatToFloat16(maxStep / 63f);
            short mh = Float.floatToFloat16(maxMin / 63f);
            float d = Float.float16ToFloat(dh), dmin = Float.float16ToFloat(mh);
            for (int j = 0; j < 8; j++) {
                sc[j] = d > 0 ? clamp(Quantization.nearestInt(step[j] / d), 0, 63) : 0;
                mq[j] = dmin > 0 ? clamp(Quantization.nearestInt(mins[j] / dmin), 0, 63) : 0;
            }
            dst.set(Quantization.I16, o, dh);
            dst.set(Quantization.I16, o + 2, mh);
            for (int j = 0; j < 4; j++) {
                put(dst, o + 4 + j, (sc[j] & 63) | ((sc[j + 4] >>> 4) << 6));
                put(dst, o + 8 + j, (mq[j] & 63) | ((mq[j + 4] >>> 4) << 6));
                put(dst, o + 12 + j, (sc[j + 4] & 0xf) | ((mq[j + 4] & 0xf) << 4));
            }
            for (int k = 0; k < 4; k++) {
                for (int l = 0; l < 32; l++) {
                    int q0 = nibble(src[s + 64 * k + l], d * sc[2 * k], dmin * mq[2 * k]);
                    int q1 = nibble(src[s + 64 * k + 32 + l], d * sc[2 * k + 1], dmin * mq[2 * k + 1]);
                    put(dst, o + 16 + 32 * k + l, q0 | (q1 << 4));
                }
            }
        }
    }

    private static int nibble(float x, float scale, float min) {
        return scale > 0 ? clamp(Quantization.nearestInt((x + min) / scale), 0, 15) : 0;
    }

    static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }

    private static void put(MemorySegment seg, long off, int v) {
        seg.set(ValueLayout.JAVA_BYTE, off, (byte) v);
    }
}
