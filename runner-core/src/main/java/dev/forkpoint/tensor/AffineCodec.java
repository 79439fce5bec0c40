package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * MLX affine quantisation: packing and unpacking of the code bit stream ({@link AffineFormat}), a quantiser and the
 * row dequantiser.
 * <p><b>Quantiser.</b> Per group of g values with minimum m and maximum M: the bias b is m rounded down (towards −∞)
 * to the scale type, the scale s is (M − b)/(2^bits − 1) rounded up to the scale type, and each code is
 * q = clamp(rint((w − b)/s), 0, 2^bits − 1) chosen against these rounded values. (MLX's own quantiser instead
 * makes the edge of larger magnitude exactly representable; both are min/max affine.) Since b ≤ m and
 * b + (2^bits − 1)·s ≥ M the codes never clip, so for every element
 * <pre>|w − (s·q + b)| ≤ s/2 + 2^−23·(|b| + (2^bits − 1)·s)</pre>
 * where the second term covers the float32 rounding of the dequantisation (product and sum); a constant group gets
 * a scale just large enough to reach its value from the rounded bias, and a group of zeros s = b = 0, exact.
 * Values whose range does not fit the scale type (beyond ±65504 in F16) are refused.
 */
public final class AffineCodec {
    private AffineCodec() {}

    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * A quantised matrix in plain arrays: {@code packed} the rows' uint32 words (rows · cols·bits/32, row-major),
     * {@code scales} and {@code biases} rows · cols/groupSize values, each exactly representable in the scale type
     * the matrix was quantised for.
     */
    public record AffineArrays(AffineFormat format, int rows, int cols, int[] packed, float[] scales, float[] biases) {

        /** The packed codes as little-endian bytes (MLX's uint32 weight tensor). */
        public byte[] packedBytes() {
            ByteBuffer b = ByteBuffer.allocate(packed.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            b.asIntBuffer().put(packed);
            return b.array();
        }

        /** The scales as little-endian {@code scaleType} values; refuses a type that would round them. */
        public byte[] scaleBytes(GgmlType scaleType) {
            return encode(scales, scaleType, "scale");
        }

        /** The biases as little-endian {@code scaleType} values; refuses a type that would round them. */
        public byte[] biasBytes(GgmlType scaleType) {
            return encode(biases, scaleType, "bias");
        }

        /** The matrix as an {@link AffineTensor} in segments allocated from {@code arena}. */
        public AffineTensor toTensor(String name, GgmlType scaleType, Arena arena) {
            return new AffineTensor(name, rows, cols, format, copy(packedBytes(), arena), scaleType,
                    copy(scaleBytes(scaleType), arena), copy(biasBytes(scaleType), arena));
        }

        private static MemorySegment copy(byte[] bytes, Arena arena) {
            MemorySegment s = arena.allocate(Math.max(1, bytes.length), 8).asSlice(0, bytes.length);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, s, 0, bytes.length);
            return s;
        }

        private static byte[] encode(float[] v, GgmlType type, String what) {
            int size = elementBytes(type);
            ByteBuffer b = ByteBuffer.allocate(v.length * size).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < v.length; i++) {
                float r = round(v[i], type);
                if (Float.floatToIntBits(r) != Float.floatToIntBits(v[i])) {
                    throw new IllegalArgumentException(what + " " + i + " (" + v[i] + ") is not exactly representable as " + type);
                }
                switch (type) {
                    case F16 -> b.putShort(Float.floatToFloat16(v[i]));
                    case BF16 -> b.putShort(BFloat16.fromFloat(v[i]));
                    default -> b.putFloat(v[i]);
                }
            }
            return b.array();
        }
    }

    private static int elementBytes(GgmlType type) {
        return switch (type) {
            case F32 -> 4;
            case F16, BF16 -> 2;
            default -> throw new IllegalArgumentException("scale type " + type + " is not supported; supported: F32, F16, BF16");
        };
    }

    /**
     * Quantises a row-major rows × cols matrix (see the class comment for the rule and its error bound). Throws
     * {@link InvalidInputException} for a shape that does not fit the format, a non-finite value or values beyond
     * the scale type's range.
     */
    public static AffineArrays quantize(float[] w, int rows, int cols, AffineFormat f, GgmlType scaleType) {
        elementBytes(scaleType);
        if (rows < 1 || cols < 1 || cols % f.groupSize() != 0 || (long) rows * cols != w.length) {
            throw new InvalidInputException("cannot quantise " + w.length + " values as " + rows + "×" + cols + " in " + f.typeName()
                    + " (columns must be a positive multiple of " + f.groupSize() + ")");
        }
        int gs = f.groupSize(), groups = rows * (cols / gs), n = f.maxCode();
        float[] scales = new float[groups], biases = new float[groups];
        int[] codes = new int[w.length];
        for (int g = 0; g < groups; g++) {
            int o = g * gs;
            float min = Float.POSITIVE_INFINITY, max = Float.NEGATIVE_INFINITY;
            for (int i = o; i < o + gs; i++) {
                if (!Float.isFinite(w[i])) {
                    throw new InvalidInputException("cannot quantise: element " + i + " (row " + i / cols + ", column " + i % cols + ") is " + w[i]);
                }
                min = Math.min(min, w[i]);
                max = Math.max(max, w[i]);
            }
            float b = roundDown(min, scaleType);
            float s = roundUp(((double) max - b) / n, scaleType);
            if (!Float.isFinite(b) || !Float.isFinite(s)) {
                throw new InvalidInputException("cannot quantise row " + (o / cols) + ": values in [" + min + ", " + max
                        + "] do not fit " + scaleType + " scales and biases");
            }
            scales[g] = s;
            biases[g] = b;
            for (int i = o; i < o + gs; i++) {
                codes[i] = s == 0 ? 0 : (int) Math.max(0, Math.min(n, Math.rint(((double) w[i] - b) / s)));
            }
        }
        return new AffineArrays(f, rows, cols, pack(codes, f.bits()), scales, biases);
    }

    /**
     * Packs codes (each &lt; 2^bits) into uint32 words as one little-endian bit stream: code i at bits
     * [i·bits, (i+1)·bits). codes.length·bits must be a multiple of 32.
     */
    public static int[] pack(int[] codes, int bits) {
        if ((long) codes.length * bits % 32 != 0) {
            throw new IllegalArgumentException(codes.length + " codes of " + bits + " bits do not fill whole uint32 words");
        }
        int[] words = new int[(int) ((long) codes.length * bits / 32)];
        int mask = (1 << bits) - 1;
        for (int i = 0; i < codes.length; i++) {
            if ((codes[i] & ~mask) != 0) throw new IllegalArgumentException("code " + i + " (" + codes[i] + ") does not fit " + bits + " bits");
            long pos = (long) i * bits;
            int word = (int) (pos >>> 5), shift = (int) (pos & 31);
            words[word] |= codes[i] << shift;
            if (shift + bits > 32) words[word + 1] |= codes[i] >>> (32 - shift);
        }
        return words;
    }

    /** The first {@code count} codes of a bit stream packed by {@link #pack}. */
    public static int[] unpack(int[] words, int bits, int count) {
        if ((long) count * bits > 32L * words.length) {
            throw new IllegalArgumentException(count + " codes of " + bits + " bits need more than " + words.length + " words");
        }
        int[] codes = new int[count];
        long mask = (1L << bits) - 1;
        for (int i = 0; i < count; i++) {
            long pos = (long) i * bits;
            int word = (int) (pos >>> 5), shift = (int) (pos & 31);
            long v = words[word] & 0xffffffffL;
            if (shift + bits > 32) v |= (words[word + 1] & 0xffffffffL) << 32;
            codes[i] = (int) ((v >>> shift) & mask);
        }
        return codes;
    }

    /**
     * Writes row {@code row} of t as floats, s·q + b (float32 multiply, then add), to dst[dstOff …]. Reads the
     * codes 8 at a time: 8 codes fill exactly {@code bits} bytes.
     */
    public static void dequantizeRow(AffineTensor t, int row, float[] dst, int dstOff) {
        if (row < 0 || row >= t.rows()) throw new IndexOutOfBoundsException("row " + row + " of " + t.rows() + " in " + t.name());
        int cols = t.cols();
        if (dstOff < 0 || dstOff + (long) cols > dst.length) {
            throw new IndexOutOfBoundsException("row of " + cols + " floats at " + dstOff + " exceeds " + dst.length);
        }
        AffineFormat f = t.format();
        int bits = f.bits(), gs = f.groupSize(), groups = t.groupsPerRow();
        long mask = (1L << bits) - 1;
        MemorySegment p = t.packed(), sc = t.scales(), bi = t.biases();
        long rowBytes = f.packedBytesPerRow(cols), base = row * rowBytes, size = p.byteSize();
        long g0 = (long) row * groups;
        for (int g = 0; g < groups; g++) {
            float s = read(sc, t.scaleType(), g0 + g), b = read(bi, t.scaleType(), g0 + g);
            for (int c = g * gs; c < (g + 1) * gs; c += 8) {
                long o = base + (long) c / 8 * bits;
                long v;
                if (o + 8 <= size) {
                    v = p.get(I64, o);
                } else {
                    v = 0;
                    for (int k = 0; k < bits; k++) v |= (p.get(ValueLayout.JAVA_BYTE, o + k) & 0xffL) << (8 * k);
                }
                int d = dstOff + c;
                for (int k = 0; k < 8; k++) dst[d + k] = s * (int) ((v >>> (k * bits)) & mask) + b;
            }
        }
    }

    static float read(MemorySegment s, GgmlType type, long index) {
        return switch (type) {
            case F16 -> Float.float16ToFloat(s.get(I16, 2 * index));
            case BF16 -> BFloat16.toFloat(s.get(I16, 2 * index));
            default -> s.get(F32, 4 * index);
        };
    }

    /** v rounded to the nearest value of the type (F32: v itself). */
    static float round(float v, GgmlType type) {
        return switch (type) {
            case F16 -> Float.float16ToFloat(Float.floatToFloat16(v));
            case BF16 -> BFloat16.toFloat(BFloat16.fromFloat(v));
            default -> v;
        };
    }

    /** The largest value of the type that is ≤ v. */
    static float roundDown(float v, GgmlType type) {
        float r = round(v, type);
        if (r <= v) return r;
        return switch (type) {
            case F16 -> Float.float16ToFloat(stepDown(Float.floatToFloat16(r)));
            case BF16 -> BFloat16.toFloat(stepDown(BFloat16.fromFloat(r)));
            default -> Math.nextDown(r);
        };
    }

    /** The smallest value of the type that is ≥ v (v ≥ 0). */
    static float roundUp(double v, GgmlType type) {
        float f = (float) v;
        if (f < v) f = Math.nextUp(f);
        float r = round(f, type);
        if (r >= f) return r;
        return switch (type) {
            case F16 -> Float.float16ToFloat(stepUp(Float.floatToFloat16(r)));
            case BF16 -> BFloat16.toFloat(stepUp(BFloat16.fromFloat(r)));
            default -> Math.nextUp(r);
        };
    }

    /** The next smaller 16-bit float (F16 and BF16 share the sign-magnitude ordering). */
    private static short stepDown(short h) {
        if ((h & 0x7fff) == 0) return (short) 0x8001;
        return (short) (h >= 0 ? h - 1 : h + 1);
    }

    private static short stepUp(short h) {
        if ((h & 0x7fff) == 0) return 0x0001;
        return (short) (h >= 0 ? h + 1 : h - 1);
    }
}
