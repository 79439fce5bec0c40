package dev.forkpoint.engine;

/**
 * What a completion did.
 *
 * @param promptTokens          tokens in the prompt (BOS included)
 * @param promptNanos           time spent on the prompt: the cache lookup and evaluating the tokens not reused
 * @param generatedIds          ids generated (without the end-of-generation token)
 * @param generationNanos       time spent generating
 * @param doneReason            "stop" (end-of-generation token or stop string) or "length" (num_predict or context full)
 * @param text                  the generated text as emitted (stop strings removed)
 * @param cachedTokens          prompt tokens whose KV was reused from the prefix cache (not evaluated)
 * @param evaluatedPromptTokens prompt tokens evaluated: promptTokens − cachedTokens (≥ 1: the last prompt token is
 *                              always evaluated, its logits are needed)
 * @param stopSequence          the stop string that ended the generation (withheld from {@code text}), or null when
 *                              none did (end-of-generation token, num_predict, context full)
 * @param logprobs              when the request asked for them ({@link GenerationRequest#topLogprobs()}), one entry per
 *                              generated token whose text is (at least partly) in {@code text}, in order: tokens that
 *                              lie wholly inside a withheld stop string are left out, as Ollama does; empty otherwise
 */
public record GenerationResult(int promptTokens, long promptNanos, int[] generatedIds, long generationNanos,
                               String doneReason, String text, int cachedTokens, int evaluatedPromptTokens,
                               String stopSequence, java.util.List<TokenLogprob> logprobs) {
    public GenerationResult {
        logprobs = logprobs == null ? java.util.List.of() : java.util.List.copyOf(logprobs);
    }

    /** A result without log-probabilities. */
    public GenerationResult(int promptTokens, long promptNanos, int[] generatedIds, long generationNanos,
                            String doneReason, String text, int cachedTokens, int evaluatedPromptTokens, String stopSequence) {
        this(promptTokens, promptNanos, generatedIds, generationNanos, doneReason, text, cachedTokens, evaluatedPromptTokens, stopSequence, null);
    }

    /** A result that ended without a stop string. */
    public GenerationResult(int promptTokens, long promptNanos, int[] generatedIds, long generationNanos,
                            String doneReason, String text, int cachedTokens, int evaluatedPromptTokens) {
        this(promptTokens, promptNanos, generatedIds, generationNanos, doneReason, text, cachedTokens, evaluatedPromptTokens, null);
    }

    /** Evaluated prompt tokens per second (reused tokens cost nothing and are not counted). */
    public double promptTokensPerSecond() { return promptNanos == 0 ? 0 : evaluatedPromptTokens * 1e9 / promptNanos; }
    public double generationTokensPerSecond() { return generationNanos == 0 ? 0 : generatedIds.length * 1e9 / generationNanos; }
}
