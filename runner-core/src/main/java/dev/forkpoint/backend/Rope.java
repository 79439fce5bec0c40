package dev.forkpoint.backend;

/**
 * Rotary position embedding parameters.
 *
 * @param dims          rotated dimensions per head (usually the head dimension)
 * @param freqBase      θ, {@code rope.freq_base}
 * @param neox          true for the NeoX layout (pairs (i, i + dims/2), used by Qwen), false for the normal
 *                      GPT-J/Llama layout (adjacent pairs (2i, 2i + 1))
 * @param llama3Scaling Llama 3.1+ frequency scaling, or null
 */
public record Rope(int dims, double freqBase, boolean neox, Llama3Scaling llama3Scaling) {

    /** Llama 3 RoPE scaling: factor, low/high frequency factors and the original training context. */
    public record Llama3Scaling(double factor, double lowFreqFactor, double highFreqFactor, int originalContext) {}

    public Rope {
        if (dims <= 0 || dims % 2 != 0) throw new IllegalArgumentException("rope dims must be even and positive: " + dims);
        if (!(freqBase > 0)) throw new IllegalArgumentException("rope freq_base must be positive: " + freqBase);
    }

    /** θ_i for i in [0, dims/2): freqBase^(-2i/dims), with Llama 3 scaling applied. */
    public double[] inverseFrequencies() {
        double[] inv = new double[dims / 2];
        for (int i = 0; i < inv.length; i++) {
            double f = 1.0 / Math.pow(freqBase, (2.0 * i) / dims);
            if (llama3Scaling != null) f = scaleLlama3(llama3Scaling, f);
            inv[i] = f;
        }
        return inv;
    }

    /** Applies Llama 3 scaling to one inverse frequency (as Meta's reference implementation defines it). */
    static double scaleLlama3(Llama3Scaling s, double freq) {
        double lowFreqWavelen = s.originalContext() / s.lowFreqFactor();
        double highFreqWavelen = s.originalContext() / s.highFreqFactor();
        double wavelen = 2 * Math.PI / freq;
        if (wavelen < highFreqWavelen) return freq;
        if (wavelen > lowFreqWavelen) return freq / s.factor();
        double smooth = (s.originalContext() / wavelen - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
        return (1 - smooth) * freq / s.factor() + smooth * freq;
    }
}
