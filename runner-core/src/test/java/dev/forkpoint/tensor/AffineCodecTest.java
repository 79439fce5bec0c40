package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * MLX affine packing, quantisation and dequantisation. The expected packed words are written by hand from MLX's
 * layout rule (one little-endian bit stream per row, code i at bits [i·bits, (i+1)·bits), the same stream MLX's
 * extract_bits reads 3 or 5 bytes at a time) or built independently as a string of bits; the dequantised values are
 * recomputed here bit by bit from the packed bytes.
 */
class AffineCodecTest {
    private static final int[] ALL_BITS = {2, 3, 4, 5, 6, 8};
    private static final int[] ALL_GROUPS = {32, 64, 128};
    private static final GgmlType[] SCALE_TYPES = {GgmlType.F32, GgmlType.F16, GgmlType.BF16};

    private static int[] codes(int count, int... first) {
        int[] c = new int[count];
        System.arraycopy(first, 0, c, 0, first.length);
        return c;
    }

    @Test
    void handPackedWords() {
        // 2 bits: bytes of codes 1,2,3,0 → 0b00_11_10_01 = 0x39
        assertArrayEquals(new int[] {0x39393939}, AffineCodec.pack(new int[] {1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0}, 2));
        // 3 bits: codes 0..7 are the octal digits 76543210 = 0xFAC688 (24 bits); the stream repeats every 24 bits
        int[] c3 = new int[32];
        for (int i = 0; i < 32; i++) c3[i] = i % 8;
        assertEquals(0xFAC688, 076543210);
        assertArrayEquals(new int[] {0x88FAC688, 0xC688FAC6, 0xFAC688FA}, AffineCodec.pack(c3, 3));
        // 4 bits: nibble i is code i
        int[] c4 = new int[16];
        for (int i = 0; i < 16; i++) c4[i] = i;
        assertArrayEquals(new int[] {0x76543210, 0xFEDCBA98}, AffineCodec.pack(c4, 4));
        // 5 bits: code 6 = 31 at bits 30..34 straddles words 0 and 1; code 12 = 0b10101 at bits 60..64 words 1 and 2
        int[] c5 = codes(32, 1, 0, 0, 0, 0, 0, 31, 0, 0, 0, 0, 0, 21);
        assertArrayEquals(new int[] {0xC0000001, 0x50000007, 0x00000001, 0, 0}, AffineCodec.pack(c5, 5));
        // 6 bits: codes 1..8; code 5 (= 6) at bits 30..35: its low bits 0b10 end word 0, its high bits 0b1 start word 1
        int[] c6 = codes(16, 1, 2, 3, 4, 5, 6, 7, 8);
        assertArrayEquals(new int[] {0x85103081, 0x00002071, 0}, AffineCodec.pack(c6, 6));
        // 8 bits: byte i is code i
        assertArrayEquals(new int[] {0x04030201, 0x7f0080ff}, AffineCodec.pack(new int[] {1, 2, 3, 4, 0xff, 0x80, 0, 0x7f}, 8));
    }

    /** MLX's layout rule as a string of bits, least significant first, cut into 32-bit words. */
    private static int[] packByBitString(int[] codes, int bits) {
        StringBuilder s = new StringBuilder();
        for (int c : codes) {
            for (int k = 0; k < bits; k++) s.append((c >> k) & 1);
        }
        int[] words = new int[s.length() / 32];
        for (int w = 0; w < words.length; w++) {
            String lsbFirst = s.substring(32 * w, 32 * w + 32);
            words[w] = Integer.parseUnsignedInt(new StringBuilder(lsbFirst).reverse().toString(), 2);
        }
        return words;
    }

    @Test
    void randomCodesPackLikeTheBitStreamAndRoundTrip() {
        Random rnd = new Random(5);
        for (int bits : ALL_BITS) {
            for (int count : new int[] {32, 64, 96, 256}) {
                int[] c = new int[count];
                for (int i = 0; i < count; i++) c[i] = rnd.nextInt(1 << bits);
                int[] words = AffineCodec.pack(c, bits);
                assertArrayEquals(packByBitString(c, bits), words, bits + " bits, " + count + " codes");
                assertArrayEquals(c, AffineCodec.unpack(words, bits, count), bits + " bits, " + count + " codes");
            }
        }
        assertThrows(IllegalArgumentException.class, () -> AffineCodec.pack(new int[] {4}, 2));
        assertThrows(IllegalArgumentException.class, () -> AffineCodec.pack(new int[31], 3));
    }

    /** Code (r, c) read bit by bit from the packed little-endian bytes. */
    static int code(MemorySegment packed, int bits, int cols, int r, int c) {
        long bit0 = ((long) r * cols + c) * bits;
        int v = 0;
        for (int k = 0; k < bits; k++) {
            long i = bit0 + k;
            v |= ((packed.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i >>> 3) >> (i & 7)) & 1) << k;
        }
        return v;
    }

    /** Groups of every awkward kind, then Gaussian rows with per-row offsets. */
    private static float[] testMatrix(int rows, int cols, int gs, GgmlType scaleType, long seed) {
        Random rnd = new Random(seed);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.5 + 0.25 * ((i / cols) % 3 - 1));
        float huge = scaleType == GgmlType.F16 ? 30000f : 3e30f;
        for (int i = 0; i < gs; i++) {
            w[i] = 0f;                                              // zeros
            w[gs + i] = 0.1234567f;                                 // constant, not representable in F16/BF16
            w[2 * gs + i] = i % 2 == 0 ? -huge : huge * 0.7f;       // huge range
            w[3 * gs + i] = (float) (rnd.nextGaussian() * 1e-6);    // tiny: subnormal F16 scales
            w[4 * gs + i] = -3.5f;                                  // negative constant
            w[5 * gs + i] = 1000f + i * 0.001f;                     // large offset, small range
        }
        return w;
    }

    @Test
    void quantiseDequantiseStaysWithinTheAffineBound() {
        int rows = 5, cols = 768;
        for (int bits : ALL_BITS) {
            for (int gs : ALL_GROUPS) {
                for (GgmlType st : SCALE_TYPES) {
                    AffineFormat f = new AffineFormat(bits, gs);
                    float[] w = testMatrix(rows, cols, gs, st, bits * 1000 + gs);
                    AffineCodec.AffineArrays a = AffineCodec.quantize(w, rows, cols, f, st);
                    String where = f.typeName() + " " + st;
                    assertEquals(rows * cols * bits / 32, a.packed().length, where);
                    assertEquals(rows * cols / gs, a.scales().length, where);
                    AffineTensor t = a.toTensor("blk.0.test.weight", st, Arena.ofAuto());
                    float[] row = new float[cols + 2];
                    for (int r = 0; r < rows; r++) {
                        AffineCodec.dequantizeRow(t, r, row, 2);
                        for (int c = 0; c < cols; c++) {
                            int g = (r * cols + c) / gs;
                            float s = a.scales()[g], b = a.biases()[g];
                            assertEquals(Float.floatToIntBits(AffineCodec.round(s, st)), Float.floatToIntBits(s), where + " scale " + g);
                            assertEquals(Float.floatToIntBits(AffineCodec.round(b, st)), Float.floatToIntBits(b), where + " bias " + g);
                            assertEquals(s, t.scale(r, c / gs), where);
                            assertEquals(b, t.bias(r, c / gs), where);
                            assertTrue(s >= 0, where);
                            int q = code(t.packed(), bits, cols, r, c);
                            float expected = s * q + b;
                            assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(row[2 + c]), where + " row " + r + " col " + c);
                            double bound = s / 2.0 + Math.scalb(Math.abs(b) + (double) s * f.maxCode(), -23);
                            float x = w[r * cols + c];
                            assertTrue(Math.abs((double) x - expected) <= bound,
                                    where + " row " + r + " col " + c + ": " + x + " → " + expected + " (s " + s + ", b " + b + ", q " + q + ")");
                        }
                    }
                    // zeros are exact: s = b = 0
                    assertEquals(0f, a.scales()[0], where);
                    assertEquals(0f, a.biases()[0], where);
                }
            }
        }
    }

    @Test
    void quantiserRefusesWhatItCannotRepresent() {
        AffineFormat f = new AffineFormat(4, 32);
        float[] big = new float[32];
        big[3] = 1e6f;
        var e = assertThrows(InvalidInputException.class, () -> AffineCodec.quantize(big, 1, 32, f, GgmlType.F16));
        assertTrue(e.getMessage().contains("F16"), e.getMessage());
        float[] nan = new float[64];
        nan[40] = Float.NaN;
        e = assertThrows(InvalidInputException.class, () -> AffineCodec.quantize(nan, 2, 32, f, GgmlType.F32));
        assertTrue(e.getMessage().contains("row 1, column 8"), e.getMessage());
        assertThrows(InvalidInputException.class, () -> AffineCodec.quantize(new float[48], 1, 48, f, GgmlType.F32));
        AffineCodec.AffineArrays a = AffineCodec.quantize(sample(), 1, 32, f, GgmlType.F32);
        assertThrows(IllegalArgumentException.class, () -> a.scaleBytes(GgmlType.F16), "F32 scales do not fit F16 exactly");
    }

    private static float[] sample() {
        float[] w = new float[32];
        for (int i = 0; i < 32; i++) w[i] = 0.1f + i * 0.0123456f;
        return w;
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 7, 16, 32})
    void formatRefusesUnsupportedBits(int bits) {
        var e = assertThrows(InvalidInputException.class, () -> new AffineFormat(bits, 64));
        assertTrue(e.getMessage().contains(String.valueOf(bits)) && e.getMessage().contains("[2, 3, 4, 5, 6, 8]"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 16, 48, 256})
    void formatRefusesUnsupportedGroupSizes(int gs) {
        var e = assertThrows(InvalidInputException.class, () -> new AffineFormat(4, gs));
        assertTrue(e.getMessage().contains(String.valueOf(gs)) && e.getMessage().contains("[32, 64, 128]"), e.getMessage());
    }

    @Test
    void formatSizes() {
        AffineFormat f = new AffineFormat(3, 64);
        assertEquals(2048 * 3 / 8, f.packedBytesPerRow(2048));
        assertEquals(2048 * 3 / 32, f.packedWordsPerRow(2048));
        assertEquals(32, f.groupsPerRow(2048));
        assertEquals("affine 3-bit g64", f.typeName());
    }

    @Test
    void tensorSizesAreCheckedAndNamed() {
        AffineFormat f = new AffineFormat(4, 64);
        Arena arena = Arena.ofAuto();
        int rows = 3, cols = 128; // 64 bytes of codes per row, 2 groups per row
        MemorySegment packed = arena.allocate(rows * 64), scales = arena.allocate(rows * 2 * 2), biases = arena.allocate(rows * 2 * 2);
        AffineTensor ok = new AffineTensor("model.layers.0.mlp.up_proj", rows, cols, f, packed, GgmlType.F16, scales, biases);
        assertEquals(2, ok.groupsPerRow());

        var e = assertThrows(InvalidInputException.class, () -> new AffineTensor("model.layers.0.mlp.up_proj", rows, cols, f,
                arena.allocate(rows * 64 - 4), GgmlType.F16, scales, biases));
        assertTrue(e.getMessage().contains("model.layers.0.mlp.up_proj") && e.getMessage().contains("192")
                && e.getMessage().contains("188"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> new AffineTensor("t.scales", rows, cols, f, packed, GgmlType.F16,
                arena.allocate(rows * 2 * 4), biases));
        assertTrue(e.getMessage().contains("t.scales") && e.getMessage().contains("scales need 6 F16") && e.getMessage().contains("24 bytes"),
                e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> new AffineTensor("t.biases", rows, cols, f, packed, GgmlType.BF16,
                scales, arena.allocate(2)));
        assertTrue(e.getMessage().contains("t.biases") && e.getMessage().contains("biases need 6 BF16"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> new AffineTensor("t.cols", rows, 96, f, packed, GgmlType.F16, scales, biases));
        assertTrue(e.getMessage().contains("t.cols") && e.getMessage().contains("96") && e.getMessage().contains("64"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> new AffineTensor("t.type", rows, cols, f, packed, GgmlType.Q8_0, scales, biases));
        assertTrue(e.getMessage().contains("t.type") && e.getMessage().contains("Q8_0") && e.getMessage().contains("F32, F16, BF16"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> new AffineTensor("t.empty", 0, cols, f, packed, GgmlType.F16, scales, biases));
        assertTrue(e.getMessage().contains("t.empty"), e.getMessage());
    }
}
