package dev.forkpoint.sampling;

import java.util.List;

/**
 * Sampling options with Ollama's names and defaults: temperature 0.8 (0 = greedy), top_k 40, top_p 0.9, min_p 0,
 * repeat_penalty 1.0 over repeat_last_n 64, presence/frequency penalty 0, seed −1 (random), num_predict −1 (until
 * the context is full or generation ends), no stop strings.
 */
public record SamplingOptions(double temperature, int topK, double topP, double minP, double repeatPenalty,
                              int repeatLastN, double presencePenalty, double frequencyPenalty, long seed,
                              int numPredict, List<String> stop) {
    public static SamplingOptions defaults() {
        return new SamplingOptions(0.8, 40, 0.9, 0.0, 1.0, 64, 0.0, 0.0, -1, -1, List.of());
    }

    /**
     * Returns this if every option is in range; otherwise throws an {@link dev.forkpoint.InvalidInputException}
     * "option NAME must …, got VALUE". (Minimal version; the sampling package's own replaces it.)
     */
    public SamplingOptions validate() {
        if (!(Double.isFinite(temperature) && temperature >= 0)) throw bad("temperature", "must be a finite number >= 0", temperature);
        if (topK < 0) throw bad("top_k", "must be >= 0", topK);
        if (!(topP >= 0 && topP <= 1)) throw bad("top_p", "must be in [0, 1]", topP);
        if (!(minP >= 0 && minP <= 1)) throw bad("min_p", "must be in [0, 1]", minP);
        if (!(Double.isFinite(repeatPenalty) && repeatPenalty >= 0)) throw bad("repeat_penalty", "must be a finite number >= 0", repeatPenalty);
        if (repeatLastN < -1) throw bad("repeat_last_n", "must be >= -1", repeatLastN);
        if (!Double.isFinite(presencePenalty)) throw bad("presence_penalty", "must be a finite number", presencePenalty);
        if (!Double.isFinite(frequencyPenalty)) throw bad("frequency_penalty", "must be a finite number", frequencyPenalty);
        if (numPredict < -2) throw bad("num_predict", "must be >= -2", numPredict);
        for (String s : stop) if (s == null || s.isEmpty()) throw bad("stop", "must not contain empty strings", s);
        return this;
    }

    private static dev.forkpoint.InvalidInputException bad(String option, String rule, Object value) {
        return new dev.forkpoint.InvalidInputException("option " + option + " " + rule + ", got " + value);
    }

    public static SamplingOptions greedy() {
        return defaults().withTemperature(0);
    }

    public SamplingOptions withTemperature(double t) {
        return new SamplingOptions(t, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, numPredict, stop);
    }

    public SamplingOptions withNumPredict(int n) {
        return new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed, n, stop);
    }
}
