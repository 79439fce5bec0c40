package dev.forkpoint.reference;

import dev.forkpoint.tensor.GgmlType;

/**
 * How {@link ReferenceTransformer} treats the input of each matrix product. {@link #NONE} is the reference proper
 * (float64 throughout). {@link #LLAMA_CPP} simulates, in float32 as there, the rounding llama.cpp's CPU backend
 * applies to the activations before a dot product with weights of each type — to predict the error an engine that
 * makes the same choice should show, and to check that it made it:
 * <ul>
 *   <li>F32 weights: none;</li>
 *   <li>F16 / BF16 weights: the activation is rounded to F16 / BF16 (round to nearest even);</li>
 *   <li>Q8_0, Q4_0: Q8_0 blocks of 32: amax = max|x|, d = fp16(amax / 127), q = round-half-even(x · 127 / amax),
 *       value q · d;</li>
 *   <li>Q4_K, Q6_K: Q8_K blocks of 256: m = the value of largest magnitude, s = −127 / m,
 *       q = min(127, round-half-even(s · x)), value q / s.</li>
 * </ul>
 */
enum ActivationRounding {
    NONE, LLAMA_CPP;

    /** x as the dot product with weights of {@code weightType} sees it. */
    double[] apply(GgmlType weightType, double[] x) {
        if (this == NONE || weightType == GgmlType.F32) return x;
        double[] y = new double[x.length];
        switch (weightType) {
            case F16 -> { for (int i = 0; i < x.length; i++) y[i] = Float.float16ToFloat(Float.floatToFloat16((float) x[i])); }
            case BF16 -> {
                for (int i = 0; i < x.length; i++) {
                    int bits = Float.floatToRawIntBits((float) x[i]);
                    y[i] = Float.intBitsToFloat(((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16) << 16);
                }
            }
            case Q8_0, Q4_0 -> {
                for (int b = 0; b < x.length; b += 32) {
                    float amax = 0;
                    for (int i = b; i < b + 32; i++) amax = Math.max(amax, Math.abs((float) x[i]));
                    float d = Float.float16ToFloat(Float.floatToFloat16(amax / 127f));
                    float id = amax != 0 ? 127f / amax : 0f;
                    for (int i = b; i < b + 32; i++) y[i] = (float) Math.rint((float) x[i] * id) * (double) d;
                }
            }
            case Q4_K, Q6_K -> {
                for (int b = 0; b < x.length; b += 256) {
                    float max = 0, amax = 0;
                    for (int i = b; i < b + 256; i++) {
                        float ax = Math.abs((float) x[i]);
                        if (ax > amax) { amax = ax; max = (float) x[i]; }
                    }
                    if (amax == 0) continue;
                    float scale = -127f / max;
                    float d = 1 / scale;
                    for (int i = b; i < b + 256; i++) y[i] = Math.min(127, (int) Math.rint(scale * (float) x[i])) * (double) d;
                }
            }
            default -> throw new IllegalArgumentException("no llama.cpp activation format known for " + weightType + " weights");
        }
        return y;
    }
}
