package dev.forkpoint.chat;

/**
 * A rendered chat encoded once ({@link ChatTemplate#encode}).
 *
 * @param tokens     the prompt's tokens: exactly {@code tokenizer.encode(prompt, true, true)}, BOS included as the
 *                   tokenizer adds it
 * @param boundaries token offsets of the messages' ends in {@code tokens}, strictly ascending, each in [1, tokens]:
 *                   the {@link dev.forkpoint.engine.GenerationRequest#messageBoundaries()}, the prefix cache's
 *                   candidate fork points. A message end that a token spans, or that is not known, has none.
 */
public record ChatTokens(int[] tokens, int[] boundaries) {}
