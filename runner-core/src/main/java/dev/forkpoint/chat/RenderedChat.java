package dev.forkpoint.chat;

/**
 * A chat rendered to the raw prompt the model sees.
 *
 * @param prompt      the prompt text (special tokens as text, to be encoded with special-token parsing; without a
 *                    leading BOS when the tokenizer adds one itself)
 * @param messageEnds for each message, the char offset in {@code prompt} where its rendering ends, ascending; -1 for
 *                    a message whose end is not known (the template renders the messages before it differently once
 *                    it follows); {@link ChatTemplate#encode} turns them into token offsets, the prefix
 *                    cache's fork points
 */
public record RenderedChat(String prompt, int[] messageEnds) {}
