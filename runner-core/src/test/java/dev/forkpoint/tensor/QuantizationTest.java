package dev.forkpoint.tensor;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Dequantisation checked against blocks built byte by byte with expected values computed here from the GGML format
 * definitions; quantisers checked bit for bit on hand-worked Q8_0/Q4_0 blocks and by round-trip error bounds.
 */
class QuantizationTest {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final short HALF_ONE = 0x3C00, HALF_HALF = 0x3800, HALF_QUARTER = 0x3400;

    private static MemorySegment bytes(int... b) {
        MemorySegment s = Arena.ofAuto().allocate(b.length);
        for (int i = 0; i < b.length; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) b[i]);
        return s;
    }

    private static float[] dequant(GgmlType type, MemorySegment seg, int count) {
        float[] out = new float[count];
        Quantization.dequantize(type, seg, 0, out, 0, count);
        return out;
    }

    @Test
    void f16HandValues() {
        // 1.0, -2.0, 65504 (largest), 2^-24 (smallest subnormal), +Inf, 1/3 rounded (0x3555 = 1 + 0x155/1024 times 2^-2)
        MemorySegment s = bytes(0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B, 0x01, 0x00, 0x00, 0x7C, 0x55, 0x35);
        float[] v = dequant(GgmlType.F16, s, 6);
        assertArrayEquals(new float[] {1f, -2f, 65504f, 0x1p-24f, Float.POSITIVE_INFINITY, (1 + 0x155 / 1024f) / 4}, v);
    }

    @Test
    void bf16HandValuesAndRounding() {
        MemorySegment s = bytes(0x80, 0x3F, 0xA0, 0xC0); // 1.0, -5.0
        assertArrayEquals(new float[] {1f, -5f}, dequant(GgmlType.BF16, s, 2));
        MemorySegment d = Arena.ofAuto().allocate(8);
        // 0x3F808000 is a tie between 0x3F80 (even) and 0x3F81: stays 0x3F80; 0x3F818000 ties to 0x3F82 (even).
        Quantization.quantize(GgmlType.BF16, new float[] {Float.intBitsToFloat(0x3F808000), Float.intBitsToFloat(0x3F818000),
                Float.intBitsToFloat(0x3F808001), Float.NaN}, 0, 4, d, 0);
        assertEquals((short) 0x3F80, d.get(I16, 0));
        assertEquals((short) 0x3F82, d.get(I16, 2));
        assertEquals((short) 0x3F81, d.get(I16, 4));
        assertTrue(Float.isNaN(BFloat16.toFloat(d.get(I16, 6))));
    }

    @Test
    void q8_0Dequant() {
        int[] b = new int[34];
        b[0] = 0x00; b[1] = 0x38; // d = 0.5
        for (int j = 0; j < 32; j++) b[2 + j] = (j * 9 - 128) & 0xff; // int8 quants -128, -119, …
        float[] v = dequant(GgmlType.Q8_0, bytes(b), 32);
        for (int j = 0; j < 32; j++) assertEquals((byte) (j * 9 - 128) * 0.5f, v[j], "element " + j);
    }

    @Test
    void q4_0Dequant() {
        int[] b = new int[18];
        b[0] = 0x00; b[1] = 0x38; // d = 0.5
        for (int j = 0; j < 16; j++) b[2 + j] = j | ((15 - j) << 4);
        float[] v = dequant(GgmlType.Q4_0, bytes(b), 32);
        for (int j = 0; j < 16; j++) {
            assertEquals((j - 8) * 0.5f, v[j], "low nibble " + j);
            assertEquals((15 - j - 8) * 0.5f, v[16 + j], "high nibble " + j);
        }
    }

    /** get_scale_min_k4 of the format, written out: sub-blocks 0–3 use 6 low bits, 4–7 combine nibbles and top bits. */
    private static int[] q4kScaleMin(int[] s, int j) {
        if (j < 4) return new int[] {s[j] & 63, s[j + 4] & 63};
        return new int[] {(s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)};
    }

    @Test
    void q4KDequant() {
        Random rnd = new Random(1);
        int[] b = new int[144];
        b[0] = 0x00; b[1] = 0x38; // d = 0.5
        b[2] = 0x00; b[3] = 0x34; // dmin = 0.25
        int[] scales = new int[12];
        for (int i = 0; i < 12; i++) b[4 + i] = scales[i] = rnd.nextInt(256);
        for (int i = 0; i < 128; i++) b[16 + i] = rnd.nextInt(256);
        float[] v = dequant(GgmlType.Q4_K, bytes(b), 256);
        for (int e = 0; e < 256; e++) {
            int chunk = e / 64, inChunk = e % 64;
            int sub = e / 32;                       // sub-block of 32 values
            int qb = b[16 + 32 * chunk + inChunk % 32];
            int q = inChunk < 32 ? qb & 0xF : qb >> 4; // first 32 of a chunk: low nibbles, next 32: high nibbles
            int[] sm = q4kScaleMin(scales, sub);
            float expected = 0.5f * sm[0] * q - 0.25f * sm[1];
            assertEquals(expected, v[e], "element " + e);
        }
    }

    @Test
    void q6KDequant() {
        Random rnd = new Random(2);
        int[] b = new int[210];
        for (int i = 0; i < 192; i++) b[i] = rnd.nextInt(256);
        int[] sc = new int[16];
        for (int i = 0; i < 16; i++) b[192 + i] = (sc[i] = rnd.nextInt(256) - 128) & 0xff;
        b[208] = 0x00; b[209] = 0x38; // d = 0.5
        float[] v = dequant(GgmlType.Q6_K, bytes(b), 256);
        for (int e = 0; e < 256; e++) {
            int half = e / 128, pos = e % 128, quarter = pos / 32, l = pos % 32;
            int qlByte = b[64 * half + l + (quarter % 2) * 32];
            int low = quarter < 2 ? qlByte & 0xF : qlByte >> 4;
            int high = (b[128 + 32 * half + l] >> (2 * quarter)) & 3;
            int q = (low | (high << 4)) - 32;
            float expected = 0.5f * sc[e / 16] * q;
            assertEquals(expected, v[e], "element " + e);
        }
    }

    @Test
    void q8_0QuantizerMatchesHandWorkedBlock() {
        // amax = 127 gives d = 1 exactly, so q = roundf(x): ties go away from zero.
        float[] x = new float[32];
        int[] expected = new int[32];
        float[] vals = {127f, -2.5f, 2.5f, 0.49f, -0.5f, 126.6f, -127f, 3.5f, 0f, -100.4f};
        int[] qs = {127, -3, 3, 0, -1, 127, -127, 4, 0, -100};
        for (int j = 0; j < 32; j++) {
            x[j] = vals[j % vals.length];
            expected[j] = qs[j % vals.length];
        }
        MemorySegment d = Arena.ofAuto().allocate(34);
        Quantization.quantize(GgmlType.Q8_0, x, 0, 32, d, 0);
        assertEquals(HALF_ONE, d.get(I16, 0));
        for (int j = 0; j < 32; j++) assertEquals(expected[j], d.get(ValueLayout.JAVA_BYTE, 2 + j), "q" + j);
    }

    @Test
    void q4_0QuantizerMatchesHandWorkedBlock() {
        // The value of largest magnitude is −8, so d = −8 / −8 = 1 and q = min(15, trunc(x + 8.5)).
        float[] x = new float[32];
        float[] vals = {-8f, 7.6f, 0f, -0.5f, -0.6f, 3.49f, 2.5f, -7.9f};
        int[] qs = {0, 15, 8, 8, 7, 11, 11, 0};
        for (int j = 0; j < 32; j++) x[j] = vals[(j + j / 16) % vals.length];
        MemorySegment d = Arena.ofAuto().allocate(18);
        Quantization.quantize(GgmlType.Q4_0, x, 0, 32, d, 0);
        assertEquals(HALF_ONE, d.get(I16, 0));
        for (int j = 0; j < 16; j++) {
            int lo = qs[(j) % vals.length], hi = qs[(16 + j + 1) % vals.length];
            assertEquals((byte) (lo | (hi << 4)), d.get(ValueLayout.JAVA_BYTE, 2 + j), "byte " + j);
        }
        // A positive extreme: max = 8 gives d = −1, so x = 8 maps to q = 0 and x = −8 to q = min(15, 16).
        float[] y = new float[32];
        y[0] = 8f; y[16] = -8f;
        Quantization.quantize(GgmlType.Q4_0, y, 0, 32, d, 0);
        assertEquals((short) 0xBC00, d.get(I16, 0));
        assertEquals((byte) (0 | (15 << 4)), d.get(ValueLayout.JAVA_BYTE, 2));
        assertEquals((byte) 0x88, d.get(ValueLayout.JAVA_BYTE, 3));
        assertEquals(HALF_HALF, Float.floatToFloat16(0.5f));
        assertEquals(HALF_QUARTER, Float.floatToFloat16(0.25f));
    }

    /**
     * Round trips on seeded Gaussian data with a few outliers. Bounds per block of the type, from each format:
     * F16 relative 2^-11, BF16 relative 2^-8; Q8_0 |e| ≤ 0.57·amax/127 (half a step plus 127 steps times the f16 rounding of d, 2^-11);
     * Q4_0 |e| ≤ 1.01·amax/8 (one step, at the clamped extreme); Q4_K |e| ≤ range/15 of the sub-block plus the
     * 6-bit scale and min rounding (≤ 0.16·range of the super-block); Q6_K |e| ≤ 0.06·amax of the super-block.
     */
    @Test
    void roundTripErrorBounds() {
        Random rnd = new Random(42);
        int count = 4096;
        float[] x = new float[count];
        for (int i = 0; i < count; i++) x[i] = (float) (rnd.nextGaussian() * (i % 97 == 0 ? 8 : 1));
        for (GgmlType type : GgmlType.supportedTypes()) {
            MemorySegment seg = Arena.ofAuto().allocate(type.bytesFor(count));
            Quantization.quantize(type, x, 0, count, seg, 0);
            float[] y = dequant(type, seg, count);
            int bs = Math.max(type.blockSize(), 32);
            for (int b = 0; b < count / bs; b++) {
                float amax = 0, lo = 0, hi = 0;
                for (int j = 0; j < bs; j++) {
                    amax = Math.max(amax, Math.abs(x[b * bs + j]));
                    lo = Math.min(lo, x[b * bs + j]);
                    hi = Math.max(hi, x[b * bs + j]);
                }
                for (int j = 0; j < bs; j++) {
                    int i = b * bs + j;
                    double err = Math.abs(y[i] - x[i]);
                    double bound = switch (type) {
                        case F32 -> 0;
                        case F16 -> Math.abs(x[i]) * 0x1p-11;
                        case BF16 -> Math.abs(x[i]) * 0x1p-8;
                        case Q8_0 -> 0.57 * amax / 127;
                        case Q4_0 -> 1.01 * amax / 8;
                        case Q4_K -> 0.16 * (hi - lo);
                        case Q6_K -> 0.06 * amax;
                        default -> throw new AssertionError(type);
                    };
                    assertTrue(err <= bound, type + " element " + i + ": " + x[i] + " came back as " + y[i] + ", bound " + bound);
                }
            }
        }
    }

    @Test
    void rejectsPartialBlocksAndShortBuffers() {
        MemorySegment seg = Arena.ofAuto().allocate(1000);
        assertThrows(IllegalArgumentException.class, () -> Quantization.quantize(GgmlType.Q8_0, new float[40], 0, 40, seg, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> Quantization.dequantize(GgmlType.Q4_K, seg, 0, new float[2048], 0, 2048));
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> Quantization.dequantize(GgmlType.Q5_K, seg, 0, new float[256], 0, 256));
        assertTrue(e.getMessage().contains("Q5_K") && e.getMessage().contains("Q6_K"), e.getMessage());
    }
}
