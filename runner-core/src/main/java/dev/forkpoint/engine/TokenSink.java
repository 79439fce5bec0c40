package dev.forkpoint.engine;

/** Receives generated text as it becomes final (complete UTF-8, stop strings withheld). */
@FunctionalInterface
public interface TokenSink {
    void text(String piece);

    /** Called once, before prefill, when the prompt has been matched against the prefix cache. */
    default void started(int promptTokens, int cachedTokens) {}
}
