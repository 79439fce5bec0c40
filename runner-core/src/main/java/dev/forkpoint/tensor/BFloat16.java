package dev.forkpoint.tensor;

/** bfloat16 conversions: the upper 16 bits of an IEEE float, rounded to nearest even (NaNs kept quiet). */
public final class BFloat16 {
    private BFloat16() {}

    public static short fromFloat(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7fffffff) > 0x7f800000) return (short) ((bits >>> 16) | 0x40);
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    public static float toFloat(short h) {
        return Float.intBitsToFloat((h & 0xffff) << 16);
    }
}
