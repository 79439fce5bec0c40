package dev.forkpoint.format;

/**
 * Llama 3.1+ RoPE frequency scaling as configs state it ({@code rope_scaling} / {@code rope_parameters} with
 * rope_type "llama3"): the per-pair divisors of the inverse frequencies, which GGUF files carry as
 * {@code rope_freqs.weight} instead.
 */
public final class Llama3RopeFactors {
    private Llama3RopeFactors() {}

    /**
     * The factors Llama 3.1+ scaling implies (for models that carry the parameters instead of {@code rope_freqs}):
     * 1 for high frequencies, {@code factor} for low ones, smooth in between.
     */
    public static float[] of(int dims, double freqBase, double factor, double lowFreqFactor,
                                        double highFreqFactor, int originalContext) {
        float[] f = new float[dims / 2];
        double lowWavelen = originalContext / lowFreqFactor;
        double highWavelen = originalContext / highFreqFactor;
        for (int i = 0; i < f.length; i++) {
            double freq = Math.pow(freqBase, -(2.0 * i) / dims);
            double wavelen = 2 * Math.PI / freq;
            if (wavelen < highWavelen) f[i] = 1;
            else if (wavelen > lowWavelen) f[i] = (float) factor;
            else {
                double smooth = (originalContext / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
                f[i] = (float) (1 / ((1 - smooth) / factor + smooth));
            }
        }
        return f;
    }
}
