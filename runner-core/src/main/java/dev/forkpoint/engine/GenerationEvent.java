package dev.forkpoint.engine;

/** What a running generation reports, in order: one {@link Started}, any number of {@link Text} pieces, then one {@link Done} or {@link Failed}. */
public sealed interface GenerationEvent {
    /**
     * The request was admitted and matched against the prefix cache; prefill starts now. Sent once, first.
     *
     * @param promptTokens tokens in the prompt (BOS included)
     * @param cachedTokens prompt tokens reused from the prefix cache (promptTokens − cachedTokens are evaluated)
     */
    record Started(int promptTokens, int cachedTokens) implements GenerationEvent {}

    /**
     * Generated text that is final: complete UTF-8, stop strings withheld. When the request asked for
     * log-probabilities, {@code logprobs} holds the entries of the tokens this piece completes (the piece may then be
     * empty: entries released at the end for text already sent); otherwise it is empty.
     */
    record Text(String piece, java.util.List<TokenLogprob> logprobs) implements GenerationEvent {
        public Text {
            logprobs = logprobs == null ? java.util.List.of() : logprobs;
        }

        public Text(String piece) {
            this(piece, java.util.List.of());
        }
    }

    /** The generation ended normally (end-of-generation token, stop string, num_predict, context full). */
    record Done(GenerationResult result) implements GenerationEvent {}

    /**
     * The generation ended with an error (the original exception: {@link dev.forkpoint.InvalidInputException} for a
     * request problem, {@link GenerationCancelledException} when cancelled, anything else is internal). The KV steps
     * it had committed are kept or released as for a normal end; the runner keeps serving.
     */
    record Failed(RuntimeException error) implements GenerationEvent {}
}
