package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.MlxQuantVectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * MLX's floating-point quantisation modes against MLX 0.31.2's own output ({@link MlxQuantVectors}): the reference
 * dequantiser reproduces {@code <mode>.dequantized} bit for bit (the sign of zero included) and the quantiser
 * {@code <mode>.weight} and {@code <mode>.scales} byte for byte. The small-float encodings are checked against
 * definitions computed independently here: e4m3 through float16 bits (MLX's own route, not the formula the enum
 * uses), rounding by exhaustive nearest-value search.
 */
class FpCodecTest {
    private static MlxQuantVectors mlx;

    @BeforeAll
    static void vectors() {
        mlx = MlxQuantVectors.load();
    }

    @ParameterizedTest
    @EnumSource(FpFormat.class)
    void dequantizeReproducesMlxBitForBit(FpFormat f) {
        FpTensor t = mlx.tensor(f, Arena.ofAuto());
        float[] expected = mlx.floats(f.typeName() + ".dequantized");
        float[] row = new float[t.cols() + 3];
        for (int r = 0; r < t.rows(); r++) {
            FpCodec.dequantizeRow(t, r, row, 3);
            for (int c = 0; c < t.cols(); c++) {
                float e = expected[r * t.cols() + c];
                assertEquals(Float.floatToRawIntBits(e), Float.floatToRawIntBits(row[3 + c]), f + " row " + r + " col " + c + ": " + e + " vs " + row[3 + c]);
                // and element by element from the code and scale bytes
                float v = f.element().value(t.code(r, c)) * t.scale(r, c / f.groupSize());
                assertEquals(Float.floatToRawIntBits(e), Float.floatToRawIntBits(v), f + " row " + r + " col " + c);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(FpFormat.class)
    void quantiserReproducesMlxCodesAndScales(FpFormat f) {
        long[] shape = mlx.shape("w");
        FpCodec.FpArrays q = FpCodec.quantize(mlx.floats("w"), (int) shape[0], (int) shape[1], f);
        assertArrayEquals(mlx.bytes(f.typeName() + ".scales"), q.scales(), f + " scales");
        byte[] expected = mlx.bytes(f.typeName() + ".weight"), actual = q.packedBytes();
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) assertEquals(expected[i], actual[i], f + " code byte " + i);
    }

    @Test
    void vectorsCoverTheInterestingCodes() {
        // The comparison above means something only if the data exercises negatives, zeros and a spread of scales.
        for (FpFormat f : FpFormat.values()) {
            FpTensor t = mlx.tensor(f, Arena.ofAuto());
            java.util.Set<Integer> codes = new java.util.HashSet<>(), scales = new java.util.HashSet<>();
            for (int r = 0; r < t.rows(); r++) {
                for (int c = 0; c < t.cols(); c++) codes.add(t.code(r, c));
                for (int g = 0; g < t.groupsPerRow(); g++) scales.add(t.scaleByte(r, g));
            }
            assertTrue(codes.size() >= (f.bits() == 4 ? 15 : 100), f + " codes " + codes.size());
            assertTrue(scales.size() >= 8, f + " distinct scales " + scales.size());
        }
    }

    @Test
    void miniFloatValuesFollowTheirDefinitions() {
        float[] e2m1 = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
        for (int c = 0; c < 16; c++) {
            float v = MiniFloat.E2M1.value(c);
            float expected = (c & 8) != 0 ? -e2m1[c & 7] : e2m1[c & 7];
            assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(v), "E2M1 code " + c);
        }
        for (int b = 0; b < 256; b++) {
            // e4m3 as MLX converts it: (b & 127) << 7 read as float16 bits, times 256, negated when bit 7 is set
            float half = Float.float16ToFloat((short) ((b & 127) << 7)) * 256f;
            float e4m3 = (b & 128) != 0 ? -half : half;
            assertEquals(Float.floatToRawIntBits(e4m3), Float.floatToRawIntBits(MiniFloat.E4M3.value(b)), "E4M3 byte " + b);
            float e8m0 = b == 255 ? Float.POSITIVE_INFINITY : (float) Math.pow(2, b - 127);
            assertEquals(Float.floatToRawIntBits(e8m0), Float.floatToRawIntBits(MiniFloat.E8M0.value(b)), "E8M0 byte " + b);
        }
        assertEquals(480f, MiniFloat.E4M3.value(0x7F), "MLX reads e4m3 0x7F as 480, not NaN");
        assertEquals(-480f, MiniFloat.E4M3.value(0xFF));
        assertEquals(0x1p-127f, MiniFloat.E8M0.value(0));
        assertEquals(0x1p-9f, MiniFloat.E4M3.value(1), "smallest e4m3 subnormal");
    }

    /** The nearest of {@code table[0 … limit]} by exhaustive search; a tie goes to the even code. */
    private static int nearestEven(float a, float[] table, int limit) {
        int best = 0;
        for (int c = 1; c <= limit; c++) {
            double d = Math.abs((double) table[c] - a), bd = Math.abs((double) table[best] - a);
            if (d < bd || (d == bd && (c & 1) == 0)) best = c;
        }
        return best;
    }

    @Test
    void e4m3RoundsToNearestEvenAndSaturates() {
        float[] table = MiniFloat.E4M3.table();
        Random rnd = new Random(3);
        for (int i = 0; i < 20000; i++) {
            float x = (float) (Math.scalb(rnd.nextDouble(), rnd.nextInt(24) - 14) * (rnd.nextBoolean() ? 1 : -1));
            int expected = Math.abs(x) >= 464 ? 0x7E : nearestEven(Math.abs(x), table, 0x7E);
            if (x < 0) expected |= 0x80;
            assertEquals(expected, MiniFloat.e4m3(x), "x = " + x);
        }
        for (int c = 0; c < 0x7E; c++) {   // every midpoint is a tie: to the even code
            float mid = (table[c] + table[c + 1]) / 2;
            assertEquals((c & 1) == 0 ? c : c + 1, MiniFloat.e4m3(mid), "midpoint above code " + c);
            assertEquals(((c & 1) == 0 ? c : c + 1) | 0x80, MiniFloat.e4m3(-mid), "midpoint below code " + (c | 0x80));
        }
        assertEquals(0x7E, MiniFloat.e4m3(463.99f));
        assertEquals(0x7E, MiniFloat.e4m3(1e30f));
        assertEquals(0xFE, MiniFloat.e4m3(Float.NEGATIVE_INFINITY));
        assertEquals(0x80, MiniFloat.e4m3(-0f));
    }

    @Test
    void e2m1TakesTheFirstNearestInCodeOrder() {
        float[] table = MiniFloat.E2M1.table();
        Random rnd = new Random(4);
        for (int i = 0; i < 20000; i++) {
            float x = i < 64 ? (i % 2 == 0 ? 1 : -1) * (table[(i / 2) % 8] + table[(i / 2 + 1) % 8]) / 2   // the midpoints
                    : (float) ((rnd.nextDouble() * 16 - 8) * (rnd.nextInt(4) == 0 ? 0.05 : 1));
            int first = 0;   // MLX's argmin over |x − value| in code order keeps the first minimum
            for (int c = 1; c < 16; c++) if (Math.abs(x - table[c]) < Math.abs(x - table[first])) first = c;
            assertEquals(first, MiniFloat.e2m1(x), "x = " + x);
        }
    }

    @Test
    void e8m0ExponentIsLog2RoundedToNearest() {
        Random rnd = new Random(5);
        for (int i = 0; i < 20000; i++) {
            float s = (float) Math.scalb(0.5 + rnd.nextDouble(), rnd.nextInt(60) - 40);
            int n = MiniFloat.e8m0Exponent(s);
            double ratio = s / Math.scalb(1.0, n);
            assertTrue(ratio >= Math.sqrt(0.5) && ratio <= Math.sqrt(2), s + " → 2^" + n);
        }
        assertEquals(0, MiniFloat.e8m0Exponent(0f));
        assertEquals(-127, MiniFloat.e8m0Exponent(1e-42f));
        assertEquals(3, MiniFloat.e8m0Exponent(8f));
    }

    @Test
    void specialScalesDequantiseAsInMlx() {
        // One row of mxfp4: group 0 scale byte 255 (+∞), group 1 scale byte 0 (2^-127); nvfp4 with e4m3 scale 0x7F (480).
        int[] codes = new int[64];
        for (int i = 0; i < 64; i++) codes[i] = i % 16;
        byte[] packed = new FpCodec.FpArrays(FpFormat.MXFP4, 1, 64, AffineCodec.pack(codes, 4), new byte[]{(byte) 255, 0}).packedBytes();
        Arena arena = Arena.ofAuto();
        FpTensor mx = new FpTensor("t.weight", 1, 64, FpFormat.MXFP4, seg(packed, arena), seg(new byte[]{(byte) 255, 0}, arena));
        float[] row = new float[64];
        FpCodec.dequantizeRow(mx, 0, row, 0);
        assertTrue(Float.isNaN(row[0]) && Float.isNaN(row[8]), "±0 · ∞");
        assertEquals(Float.POSITIVE_INFINITY, row[1]);
        assertEquals(Float.NEGATIVE_INFINITY, row[9]);
        assertEquals(0.5f * 0x1p-127f, row[32 + 1]);
        assertEquals(6 * 0x1p-127f, row[32 + 7]);
        assertEquals(Float.floatToRawIntBits(-0f), Float.floatToRawIntBits(row[32 + 8]));
        FpTensor nv = new FpTensor("t.weight", 1, 64, FpFormat.NVFP4, seg(packed, arena), seg(new byte[]{0x7F, (byte) 0xFF, 0, 1}, arena));
        FpCodec.dequantizeRow(nv, 0, row, 0);
        assertEquals(6 * 480f, row[7]);
        assertEquals(-6 * -480f, row[16 + 15]);
        assertEquals(Float.floatToRawIntBits(-0f), Float.floatToRawIntBits(row[32 + 8]), "−0 · 0");
        assertEquals(-6 * 0x1p-9f, row[48 + 15]);
    }

    private static MemorySegment seg(byte[] b, Arena arena) {
        MemorySegment s = arena.allocate(b.length, 8);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, 0, b.length);
        return s;
    }

    @Test
    void tensorSizesAreCheckedNamingTheTensor() {
        Arena arena = Arena.ofAuto();
        var wrongScales = assertThrows(InvalidInputException.class, () ->
                new FpTensor("blk.0.ffn_up.weight", 2, 64, FpFormat.MXFP4, arena.allocate(64), arena.allocate(3)));
        assertTrue(wrongScales.getMessage().contains("blk.0.ffn_up.weight") && wrongScales.getMessage().contains("scales need 4 bytes"),
                wrongScales.getMessage());
        var wrongCodes = assertThrows(InvalidInputException.class, () ->
                new FpTensor("blk.0.ffn_up.weight", 2, 64, FpFormat.MXFP8, arena.allocate(64), arena.allocate(4)));
        assertTrue(wrongCodes.getMessage().contains("blk.0.ffn_up.weight") && wrongCodes.getMessage().contains("128 bytes"), wrongCodes.getMessage());
        var group = assertThrows(InvalidInputException.class, () ->
                new FpTensor("blk.0.ffn_up.weight", 2, 40, FpFormat.NVFP4, arena.allocate(40), arena.allocate(5)));
        assertTrue(group.getMessage().contains("group size 16"), group.getMessage());
        var mode = assertThrows(InvalidInputException.class, () -> MlxQuantMode.MXFP4.format(4, 64));
        assertTrue(mode.getMessage().contains("mxfp4") && mode.getMessage().contains("group size 32"), mode.getMessage());
        assertThrows(InvalidInputException.class, () -> FpCodec.quantize(new float[]{Float.NaN, 0}, 1, 2, FpFormat.MXFP4));
        assertEquals(java.util.Optional.empty(), MlxQuantMode.parse("mxfp6"));
        assertEquals(MlxQuantMode.NVFP4, MlxQuantMode.parse("nvfp4").orElseThrow());
    }
}
