package dev.forkpoint.engine;

/** Receives generated text as it becomes final (complete UTF-8, stop strings withheld). */
@FunctionalInterface
public interface TokenSink {
    void text(String piece);
}
