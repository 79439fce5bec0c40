package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * MLX's floating-point quantisation ({@link FpFormat}): the quantiser and the reference row dequantiser.
 * <p><b>Quantiser</b>, the rule of MLX 0.31's CPU {@code fp_quantize} for float32 weights (established against the
 * codes and scales MLX itself wrote, {@code ../shared/reference/mlx-quant-vectors.safetensors}). Per group:
 * s = max|w| / maxElement (6 for E2M1, 448 for E4M3; float32 division);
 * <ul>
 *   <li>nvfp4: the scale byte is {@link MiniFloat#e4m3}(s), and each element is divided (float32) by that byte's value
 *       (a scale that rounds to 0 gives code 0 throughout, as MLX's division by zero does);</li>
 *   <li>mxfp4, mxfp8: n = round(log2 s), ties to even (0 for s = 0), the scale byte is n + 127, and each element is
 *       divided by 2^n (exact);</li>
 * </ul>
 * then each quotient becomes its code: {@link MiniFloat#e2m1} (the first nearest of the 16 values in code order:
 * ties to the smaller magnitude, small values of either sign to +0) or {@link MiniFloat#e4m3} (to nearest even,
 * saturating at ±448). Non-finite weights are refused. For n outside [−127, 127] (only groups whose largest value is
 * below 6·2^−127 reach it) the exponent is clamped, where MLX's byte would wrap around.
 */
public final class FpCodec {
    private FpCodec() {}

    /**
     * A quantised matrix in plain arrays: {@code packed} the rows' uint32 words (rows · cols·bits/32, row-major),
     * {@code scales} the rows · cols/groupSize scale bytes.
     */
    public record FpArrays(FpFormat format, int rows, int cols, int[] packed, byte[] scales) {

        /** The packed codes as little-endian bytes (MLX's uint32 weight tensor). */
        public byte[] packedBytes() {
            ByteBuffer b = ByteBuffer.allocate(packed.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            b.asIntBuffer().put(packed);
            return b.array();
        }

        /** The matrix as an {@link FpTensor} in segments allocated from {@code arena}. */
        public FpTensor toTensor(String name, Arena arena) {
            return new FpTensor(name, rows, cols, format, copy(packedBytes(), arena), copy(scales, arena));
        }

        private static MemorySegment copy(byte[] bytes, Arena arena) {
            MemorySegment s = arena.allocate(Math.max(1, bytes.length), 8).asSlice(0, bytes.length);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, s, 0, bytes.length);
            return s;
        }
    }

    /**
     * Quantises a row-major rows × cols matrix by MLX's rule (see the class comment). Throws
     * {@link InvalidInputException} for a shape that does not fit the format or a non-finite value.
     */
    public static FpArrays quantize(float[] w, int rows, int cols, FpFormat f) {
        int gs = f.groupSize();
        if (rows < 1 || cols < 1 || cols % gs != 0 || (long) rows * cols != w.length) {
            throw new InvalidInputException("cannot quantise " + w.length + " values as " + rows + "×" + cols + " in " + f.typeName()
                    + " (columns must be a positive multiple of " + gs + ")");
        }
        int groups = rows * (cols / gs);
        byte[] scales = new byte[groups];
        int[] codes = new int[w.length];
        for (int g = 0; g < groups; g++) {
            int o = g * gs;
            float amax = 0;
            for (int i = o; i < o + gs; i++) {
                if (!Float.isFinite(w[i])) {
                    throw new InvalidInputException("cannot quantise: element " + i + " (row " + i / cols + ", column " + i % cols + ") is " + w[i]);
                }
                amax = Math.max(amax, Math.abs(w[i]));
            }
            float s = amax / f.maxElement();
            float divisor;
            if (f.scale() == MiniFloat.E4M3) {
                int b = MiniFloat.e4m3(s);
                scales[g] = (byte) b;
                divisor = MiniFloat.E4M3.value(b);
            } else {
                int n = MiniFloat.e8m0Exponent(s);
                scales[g] = (byte) (n + 127);
                divisor = Math.scalb(1f, n);
            }
            for (int i = o; i < o + gs; i++) {
                if (divisor == 0) continue;   // code 0
                float q = w[i] / divisor;
                codes[i] = f.element() == MiniFloat.E2M1 ? MiniFloat.e2m1(q) : MiniFloat.e4m3(q);
            }
        }
        return new FpArrays(f, rows, cols, AffineCodec.pack(codes, f.bits()), scales);
    }

    /** Writes row {@code row} of t as floats, value(code) · value(scale) (exact), to dst[dstOff …]. */
    public static void dequantizeRow(FpTensor t, int row, float[] dst, int dstOff) {
        if (row < 0 || row >= t.rows()) throw new IndexOutOfBoundsException("row " + row + " of " + t.rows() + " in " + t.name());
        int cols = t.cols();
        if (dstOff < 0 || dstOff + (long) cols > dst.length) {
            throw new IndexOutOfBoundsException("row of " + cols + " floats at " + dstOff + " exceeds " + dst.length);
        }
        FpFormat f = t.format();
        MiniFloat element = f.element(), scale = f.scale();
        int gs = f.groupSize(), groups = t.groupsPerRow();
        MemorySegment p = t.packed(), sc = t.scales();
        long base = row * f.packedBytesPerRow(cols), g0 = (long) row * groups;
        for (int g = 0; g < groups; g++) {
            float s = scale.value(sc.get(ValueLayout.JAVA_BYTE, g0 + g));
            for (int c = g * gs; c < (g + 1) * gs; c++) {
                int code = f.bits() == 8 ? p.get(ValueLayout.JAVA_BYTE, base + c)
                        : p.get(ValueLayout.JAVA_BYTE, base + c / 2) >> (4 * (c & 1));
                dst[dstOff + c] = element.value(code) * s;
            }
        }
    }
}
