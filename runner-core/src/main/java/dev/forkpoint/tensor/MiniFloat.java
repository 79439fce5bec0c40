package dev.forkpoint.tensor;

/**
 * The small float encodings of MLX's floating-point quantisation modes, decoded exactly as MLX 0.31 decodes them
 * (mlx/ops.cpp {@code fp_dequantize}, mlx/backend/cpu/quantized.cpp, mlx/backend/cpu/unary_ops.h {@code FromFP8},
 * mlx/backend/metal/kernels/fp4.h and fp8.h), and rounded to as MLX's CPU quantiser rounds ({@code fp_quantize}):
 * <ul>
 *   <li>{@link #E2M1} (FP4, the element codes of mxfp4 and nvfp4): sign bit 3, two exponent bits (bias 1), one
 *       mantissa bit; the 16 codes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and, with bit 3 set, −0 and the negatives. No
 *       infinities or NaNs exist.</li>
 *   <li>{@link #E4M3} (FP8 e4m3, the element codes of mxfp8 and the scales of nvfp4): sign bit 7, four exponent bits
 *       (bias 7), three mantissa bits; exponent 0 is subnormal (m/8 · 2^−6). MLX has no NaN: it converts through
 *       float16 bits, so 0x7F and 0xFF read as ±480 (OCP's e4m3fn calls them NaN); its rounding never produces them
 *       (it saturates at 0x7E = 448).</li>
 *   <li>{@link #E8M0} (the scales of mxfp4 and mxfp8): an unsigned byte e standing for 2^(e − 127); 0 is 2^−127
 *       (a float subnormal) and 255 is +∞ in MLX (2^128 overflows float; OCP's MX calls it NaN), so a group with
 *       scale 255 dequantises to ±∞, and to NaN where its code is ±0.</li>
 * </ul>
 */
public enum MiniFloat {
    E2M1(4, 0), E4M3(8, 1), E8M0(8, 2);

    private final int bits;
    private final float[] values;

    MiniFloat(int bits, int kind) {
        this.bits = bits;
        this.values = new float[1 << bits];
        for (int c = 0; c < values.length; c++) values[c] = decode(kind, c);
    }

    /** The value of code c of encoding {@code kind} (0 E2M1, 1 E4M3, 2 E8M0), computed in double and exact in float. */
    private static float decode(int kind, int c) {
        double v = switch (kind) {
            case 0 -> {
                int e = (c >> 1) & 3, m = c & 1;
                double mag = e == 0 ? m * 0.5 : (1 + m * 0.5) * Math.scalb(1.0, e - 1);
                yield (c & 8) != 0 ? -mag : mag;
            }
            case 1 -> {
                int e = (c >> 3) & 15, m = c & 7;
                double mag = e == 0 ? m / 8.0 * 0x1p-6 : (1 + m / 8.0) * Math.scalb(1.0, e - 7);
                yield (c & 0x80) != 0 ? -mag : mag;
            }
            default -> c == 255 ? Double.POSITIVE_INFINITY : Math.scalb(1.0, c - 127);
        };
        return (float) v;
    }

    /** Bits per code: 4 or 8. */
    public int bits() {
        return bits;
    }

    /** The value of code {@code c} (its low {@link #bits()} bits), exactly as MLX decodes it. */
    public float value(int c) {
        return values[c & (values.length - 1)];
    }

    /** Every code's value, indexed by code (a copy). */
    public float[] table() {
        return values.clone();
    }

    /**
     * The E2M1 code MLX's CPU quantiser gives x (the first nearest of the 16 values in code order, so a tie goes to the
     * smaller magnitude and any |x| ≤ 0.25 gives +0, code 0; beyond 6 the largest, ±6). x must not be NaN.
     */
    public static int e2m1(float x) {
        float a = Math.abs(x);
        int m = a <= 0.25f ? 0 : a <= 0.75f ? 1 : a <= 1.25f ? 2 : a <= 1.75f ? 3
                : a <= 2.5f ? 4 : a <= 3.5f ? 5 : a <= 5f ? 6 : 7;
        return m != 0 && x < 0 ? m | 8 : m;
    }

    /**
     * The E4M3 code of x as MLX rounds (its {@code ToFP8}): to nearest, ties to even, magnitudes of 464 and more (and
     * infinities) saturated to 448 (0x7E), the sign kept (−0 is 0x80). x must not be NaN.
     */
    public static int e4m3(float x) {
        int sign = Float.floatToRawIntBits(x) < 0 ? 0x80 : 0;
        float a = Math.abs(x);
        if (a >= 464f) return sign | 0x7E;
        int lo = 0, hi = 0x7E;   // the largest code with value ≤ a, by bisection over the ordered magnitudes
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (E4M3.values[mid] <= a) lo = mid; else hi = mid - 1;
        }
        int c = lo;
        if (c < 0x7E) {
            float below = E4M3.values[c], above = E4M3.values[c + 1];
            double dBelow = (double) a - below, dAbove = (double) above - a;
            if (dAbove < dBelow || (dAbove == dBelow && (c & 1) == 1)) c++;
        }
        return sign | c;
    }

    /**
     * MLX's e8m0 scale exponent for a group whose scale (largest magnitude / the element type's largest value) is s ≥ 0:
     * round(log2 s) with ties to even (0 for s = 0, since MLX then keeps the group's values unchanged), here
     * limited to [−127, 127] so that it fits the byte (MLX would wrap below 2^−127, which no float weight group reaches
     * unless all its values are below 6 · 2^−127).
     */
    public static int e8m0Exponent(float s) {
        if (s == 0) return 0;
        double log2 = Math.log(s) / Math.log(2.0);
        int n = (int) Math.rint((float) log2);
        return Math.max(-127, Math.min(127, n));
    }
}
