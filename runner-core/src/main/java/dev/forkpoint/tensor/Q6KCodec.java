package dev.forkpoint.tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Q6_K: super-blocks of 256 values (210 bytes): 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales
 * (one per 16 consecutive values), f16 d. For each half n (128 values) and l &lt; 32, values 128n + l + 32i (i &lt; 4)
 * take their low bits from ql[64n + l] (i = 0, 1: low nibble of ql[64n + l + 32i]; i = 2, 3: high nibble of
 * ql[64n + l + 32(i−2)]) and their high bits from bits 2i, 2i+1 of qh[32n + l]; value = d · scale · (q − 32).
 */
final class Q6KCodec {
    private Q6KCodec() {}

    static final int BLOCK = 256;
    static final int BYTES = 210;

    static void dequantize(MemorySegment src, long srcOff, float[] dst, int dstOff, int count) {
        for (int b = 0; b < count / BLOCK; b++) {
            long o = srcOff + (long) b * BYTES;
            float d = Float.float16ToFloat(src.get(Quantization.I16, o + 208));
            int t = dstOff + b * BLOCK;
            for (int n = 0; n < 2; n++) {
                long ql = o + 64 * n, qh = o + 128 + 32 * n, sc = o + 192 + 8 * n;
                for (int l = 0; l < 32; l++) {
                    int h = u8(src, qh + l);
                    int a = u8(src, ql + l), c = u8(src, ql + l + 32);
                    int q1 = ((a & 0xf) | ((h & 3) << 4)) - 32;
                    int q2 = ((c & 0xf) | (((h >>> 2) & 3) << 4)) - 32;
                    int q3 = ((a >>> 4) | (((h >>> 4) & 3) << 4)) - 32;
                    int q4 = ((c >>> 4) | (((h >>> 6) & 3) << 4)) - 32;
                    int is = l / 16;
                    int e = t + 128 * n + l;
                    dst[e] = d * s8(src, sc + is) * q1;
                    dst[e + 32] = d * s8(src, sc + is + 2) * q2;
                    dst[e + 64] = d * s8(src, sc + is + 4) * q3;
                    dst[e + 96] = d * s8(src, sc + is + 6) * q4;
                }
            }
        }
    }

    /** A straightforward encoder: per 16 values step = amax / 31, steps quantised to int8 against d = max step / 127. */
    static void quantize(float[] src, int srcOff, int count, MemorySegment dst, long dstOff) {
        float[] step = new float[16];
        int[] sc = new int[16];
        int[] q = new int[BLOCK];
        for (int b = 0; b < count / BLOCK; b++) {
            int s = srcOff + b * BLOCK;
            long o = dstOff + (long) b * BYTES;
            float maxStep = 0;
            for (int j = 0; j < 16; j++) {
                float amax = 0;
                for (int l = 0; l < 16; l++) amax = Math.max(amax, Math.abs(src[s + 16 * j + l]));
                step[j] = amax / 31f;
                maxStep = Math.max(maxStep, step[j]);
            }
            short dh = Float.floatToFloat16(maxStep / 127f);
            float d = Float.float16ToFloat(dh);
            for (int j = 0; j < 16; j++) {
                sc[j] = d > 0 ? Q4KCodec.clamp(Quantization.nearestInt(step[j] / d), 0, 127) : 0;
                float st = d * sc[j];
                for (int l = 0; l < 16; l++) {
                    q[16 * j + l] = st > 0 ? Q4KCodec.clamp(Quantization.nearestInt(src[s + 16 * j + l] / st), -32, 31) + 32 : 32;
                }
            }
            for (int n = 0; n < 2; n++) {
                for (int l = 0; l < 32; l++) {
                    int e = 128 * n + l;
                    int q1 = q[e], q2 = q[e + 32], q3 = q[e + 64], q4 = q[e + 96];
                    put(dst, o + 64 * n + l, (q1 & 0xf) | ((q3 & 0xf) << 4));
                    put(dst, o + 64 * n + l + 32, (q2 & 0xf) | ((q4 & 0xf) << 4));
                    put(dst, o + 128 + 32 * n + l, (q1 >>> 4) | ((q2 >>> 4) << 2) | ((q3 >>> 4) << 4) | ((q4 >>> 4) << 6));
                }
            }
            for (int j = 0; j < 16; j++) put(dst, o + 192 + j, sc[j]);
            dst.set(Quantization.I16, o + 208, dh);
        }
    }

    private static int u8(MemorySegment seg, long off) {
        return seg.get(ValueLayout.JAVA_BYTE, off) & 0xff;
    }

    private static int s8(MemorySegment seg, long off) {
        return seg.get(ValueLayout.JAVA_BYTE, off);
    }

    private static void put(MemorySegment seg, long off, int v) {
        seg.set(ValueLayout.JAVA_BYTE, off, (byte) v);
    }
}
