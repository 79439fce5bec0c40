package dev.forkpoint.bench;

/**
 * Llama 3.1-style RoPE frequency scaling (the {@code rope_scaling} block of Meta's config): wavelengths shorter than
 * {@code originalContext / highFreqFactor} keep their frequency, those longer than {@code originalContext /
 * lowFreqFactor} are slowed by {@code factor}, and the band between is interpolated smoothly.
 */
record Llama3RopeScaling(double factor, double lowFreqFactor, double highFreqFactor, int originalContext) {

    /**
     * The per-pair divisors llama.cpp reads from {@code rope_freqs.weight}: pair i's frequency is
     * {@code base^(-2i/headDim) / factors[i]}.
     */
    float[] factors(int headDim, double base) {
        float[] out = new float[headDim / 2];
        double lowWavelen = originalContext / lowFreqFactor;
        double highWavelen = originalContext / highFreqFactor;
        for (int i = 0; i < out.length; i++) {
            double freq = Math.pow(base, -2.0 * i / headDim);
            double wavelen = 2 * Math.PI / freq;
            double divisor;
            if (wavelen < highWavelen) {
                divisor = 1;
            } else if (wavelen > lowWavelen) {
                divisor = factor;
            } else {
                double smooth = (originalContext / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
                divisor = 1 / ((1 - smooth) / factor + smooth);
            }
            out[i] = (float) divisor;
        }
        return out;
    }
}
