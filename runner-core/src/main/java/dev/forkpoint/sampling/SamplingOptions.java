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
