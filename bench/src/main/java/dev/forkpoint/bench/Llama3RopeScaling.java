package dev.forkpoint.bench;

import dev.forkpoint.backend.Rope;

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
        return dev.forkpoint.format.Llama3RopeFactors.of(headDim, base, factor, lowFreqFactor, highFreqFactor, originalContext);
    }
}
