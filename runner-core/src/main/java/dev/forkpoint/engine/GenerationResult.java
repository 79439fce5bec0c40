package dev.forkpoint.engine;

/**
 * What a completion did.
 *
 * @param promptTokens    tokens in the prompt (BOS included)
 * @param promptNanos     time spent evaluating the prompt
 * @param generatedIds    ids generated (without the end-of-generation token)
 * @param generationNanos time spent generating
 * @param doneReason      "stop" (end-of-generation token or stop string) or "length" (num_predict or context full)
 * @param text            the generated text as emitted (stop strings removed)
 */
public record GenerationResult(int promptTokens, long promptNanos, int[] generatedIds, long generationNanos,
                               String doneReason, String text) {
    public double promptTokensPerSecond() { return promptNanos == 0 ? 0 : promptTokens * 1e9 / promptNanos; }
    public double generationTokensPerSecond() { return generationNanos == 0 ? 0 : generatedIds.length * 1e9 / generationNanos; }
}
