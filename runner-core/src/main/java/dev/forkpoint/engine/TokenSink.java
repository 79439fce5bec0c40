package dev.forkpoint.engine;

/** Receives generated text as it becomes final (complete UTF-8, stop strings withheld). */
@FunctionalInterface
public interface TokenSink {
    void text(String piece);

    /**
     * Text with the log-probability entries of the tokens it completes (only when the request asked for them; the
     * piece may be empty when only entries are released). By default, non-empty text goes to {@link #text(String)}.
     */
    default void text(String piece, java.util.List<TokenLogprob> logprobs) {
        if (!piece.isEmpty()) text(piece);
    }

    /** Called once, before prefill, when the prompt has been matched against the prefix cache. */
    default void started(int promptTokens, int cachedTokens) {}
}
