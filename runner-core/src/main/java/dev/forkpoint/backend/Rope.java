package dev.forkpoint.backend;

/**
 * Rotary position embedding parameters.
 *
 * @param dims        rotated dimensions per head (usually the head dimension; the rest pass through)
 * @param freqBase    θ, {@code rope.freq_base}
 * @param neox        true for the NeoX layout (pairs (i, i + dims/2), Qwen), false for the normal layout
 *                    (adjacent pairs (2i, 2i + 1), Llama in GGUF)
 * @param freqFactors per-pair divisors of the inverse frequency (GGUF's {@code rope_freqs.weight}, which is how
 *                    Llama 3.1+ scaling is stored), or null
 */
public record Rope(int dims, double freqBase, boolean neox, float[] freqFactors) {

    public Rope {
        if (dims <= 0 || dims % 2 != 0) throw new IllegalArgumentException("rope dims must be even and positive: " + dims);
        if (!(freqBase > 0)) throw new IllegalArgumentException("rope freq_base must be positive: " + freqBase);
        if (freqFactors != null && freqFactors.length != dims / 2) {
            throw new IllegalArgumentException("rope_freqs has " + freqFactors.length + " factors, " + dims / 2 + " needed");
        }
    }

    /** θ_i = freqBase^(−2i/dims) / factor_i for i in [0, dims/2). */
    public double[] inverseFrequencies() {
        double[] inv = new double[dims / 2];
        for (int i = 0; i < inv.length; i++) {
            inv[i] = Math.pow(freqBase, -(2.0 * i) / dims);
            if (freqFactors != null) inv[i] /= freqFactors[i];
        }
        return inv;
    }
}
