package dev.forkpoint.engine;

import java.util.List;

/**
 * One token's log-probability, as the APIs report it ({@link GenerationRequest#topLogprobs()} asks for them).
 *
 * <p>The distribution: the softmax over the whole vocabulary of the model's logits divided by the temperature
 * (temperature 0, greedy, counts as 1: the model's own softmax), before the penalties (repeat, presence, frequency)
 * and before the top_k / top_p / min_p filters. Computed from the float logits with float exp terms summed in double
 * (within about 1e-6 of a float64 log-softmax of the same logits). A token at −∞ (probability 0) reports
 * {@link #NEGATIVE_INFINITY_LOGPROB}, as OpenAI does, since JSON has no −∞; NaN logits are never listed.
 *
 * @param id      the token id
 * @param token   the token's own bytes as UTF-8 text (invalid or partial sequences as U+FFFD), or, for a token that
 *                contributes no bytes to the text (control tokens), its piece as stored in the vocabulary
 * @param bytes   the bytes the token contributes to the generated text (empty for control tokens); a character split
 *                across tokens has its bytes in each token's {@code bytes} though its {@code token} shows U+FFFD
 * @param logprob the natural log of the token's probability
 * @param top     for a generated token: the most likely tokens at its position, most likely first (ties: lower id
 *                first), as many as requested (fewer when fewer tokens have a finite logit); empty for the entries of
 *                that list themselves
 */
public record TokenLogprob(int id, String token, byte[] bytes, double logprob, List<TokenLogprob> top) {
    /** What a token of probability 0 reports (OpenAI's value). */
    public static final double NEGATIVE_INFINITY_LOGPROB = -9999.0;

    /** The most alternatives any API may ask for per token (OpenAI chat's and Ollama's limit). */
    public static final int MAX_TOP = 20;

    public TokenLogprob {
        top = top == null ? List.of() : List.copyOf(top);
    }
}
