package dev.forkpoint.engine;

import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.sampling.structured.GrammarNode;

/**
 * One completion: a prompt (raw text, or the tokens a chat template's rendering encoded to), sampling options, and
 * the context limits.
 *
 * @param prompt            the prompt's text, encoded with the model's BOS/EOS and special-token parsing; when
 *                          {@code promptTokens} is given, the text they were encoded from (not encoded again)
 * @param numCtx            the context window in tokens (prompt + generated); 0 = {@link LoadedModel#defaultNumCtx()}
 *                          (Ollama's 4096, or the model's trained context when that is smaller); above the trained
 *                          context it is refused naming num_ctx
 * @param numBatch          prefill chunk size in tokens, 1 … num_ctx; {@link #NUM_BATCH_DEFAULT} when the user set none
 *                          (512, or num_ctx when that is smaller); anything else is refused naming num_batch
 * @param messageBoundaries token offsets into the encoded prompt (BOS included) where chat messages end, ascending,
 *                          each in [1, prompt tokens]: candidate fork points. A hybrid model's generation
 *                          captures checkpoints of its non-truncatable state at them (the deepest ones, within its
 *                          capture limit and the checkpoint budget); attention-only models need none. Empty = none.
 *                          Not copied: do not modify it afterwards.
 * @param cacheSalt         a tenant key: prompts share cached prefixes only with requests of the same salt ("" = the
 *                          shared cache)
 * @param topLogprobs       log-probabilities of the generated tokens ({@link TokenLogprob}): {@link #LOGPROBS_OFF} (−1)
 *                          = none (nothing is computed), 0 = the chosen token's only, N = also the N most likely tokens
 *                          at each position, N ≤ {@link TokenLogprob#MAX_TOP}; anything else is refused naming
 *                          top_logprobs. The APIs check their own limits (and field names) first.
 * @param thinkingBudget    a cap on the reply's thinking block ({@link ThinkingBudget}), or null for none
 * @param grammar           structured output: the generated text must match this grammar (a JSON schema's,
 *                          {@link dev.forkpoint.sampling.structured.JsonSchemaGrammar}); tokens that cannot continue a
 *                          match are masked before sampling, generation ends when the match is complete and cannot be
 *                          extended (or at an end-of-generation token once it is complete). null = unconstrained.
 * @param promptTokens      the prompt already encoded (BOS included as the tokenizer adds it), or null to encode
 *                          {@code prompt}: a chat is rendered and encoded once ({@link dev.forkpoint.chat.ChatTemplate#encode})
 *                          and its tokens travel with the request. Ids outside the vocabulary are refused. Not copied.
 */
public record GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch,
                                int[] messageBoundaries, String cacheSalt, int topLogprobs, ThinkingBudget thinkingBudget,
                                GrammarNode grammar, int[] promptTokens) {
    /** {@link #topLogprobs()}: no log-probabilities. */
    public static final int LOGPROBS_OFF = -1;

    public static final int DEFAULT_NUM_BATCH = 512;
    /** numBatch when the user gave none. */
    public static final int NUM_BATCH_DEFAULT = Integer.MIN_VALUE;

    private static final int[] NONE = new int[0];

    /** A request without log-probabilities. */
    public GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch, int[] messageBoundaries, String cacheSalt) {
        this(prompt, sampling, numCtx, numBatch, messageBoundaries, cacheSalt, LOGPROBS_OFF);
    }

    /** An unconstrained request without a thinking budget. */
    public GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch, int[] messageBoundaries,
                             String cacheSalt, int topLogprobs) {
        this(prompt, sampling, numCtx, numBatch, messageBoundaries, cacheSalt, topLogprobs, null, null, null);
    }

    public GenerationRequest {
        if (messageBoundaries == null) messageBoundaries = NONE;
        if (cacheSalt == null) cacheSalt = "";
    }

    /** A request without message boundaries, in the shared cache. */
    public GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch) {
        this(prompt, sampling, numCtx, numBatch, NONE, "", LOGPROBS_OFF);
    }

    /** The prefill chunk size this request asks for, given the context it runs in. */
    public int numBatchFor(int numCtx) {
        return numBatch == NUM_BATCH_DEFAULT ? Math.min(DEFAULT_NUM_BATCH, numCtx) : numBatch;
    }

    public GenerationRequest withMessageBoundaries(int... boundaries) {
        return new GenerationRequest(prompt, sampling, numCtx, numBatch, boundaries, cacheSalt, topLogprobs, thinkingBudget, grammar, promptTokens);
    }

    public GenerationRequest withCacheSalt(String salt) {
        return new GenerationRequest(prompt, sampling, numCtx, numBatch, messageBoundaries, salt, topLogprobs, thinkingBudget, grammar, promptTokens);
    }

    /** This request with log-probabilities: {@link #LOGPROBS_OFF}, 0 (the chosen token's) or N alternatives too. */
    public GenerationRequest withTopLogprobs(int n) {
        return new GenerationRequest(prompt, sampling, numCtx, numBatch, messageBoundaries, cacheSalt, n, thinkingBudget, grammar, promptTokens);
    }

    /** This request with its output constrained to {@code grammar} (null: unconstrained). */
    public GenerationRequest withGrammar(GrammarNode grammar) {
        return new GenerationRequest(prompt, sampling, numCtx, numBatch, messageBoundaries, cacheSalt, topLogprobs, thinkingBudget, grammar, promptTokens);
    }

    /** This request with a cap on its thinking block (null = none). */
    public GenerationRequest withThinkingBudget(ThinkingBudget budget) {
        return new GenerationRequest(prompt, sampling, numCtx, numBatch, messageBoundaries, cacheSalt, topLogprobs, budget, grammar, promptTokens);
    }

    /** Whether log-probabilities are asked for. */
    public boolean wantsLogprobs() { return topLogprobs != LOGPROBS_OFF; }

    /**
     * A request for a prompt already encoded: {@code tokens} are {@code text}'s encoding (BOS included),
     * {@code boundaries} token offsets into them (see {@link #messageBoundaries()}).
     */
    public static GenerationRequest ofTokens(String text, int[] tokens, int[] boundaries, SamplingOptions sampling, int numCtx, int numBatch) {
        return new GenerationRequest(text, sampling, numCtx, numBatch, boundaries, "", LOGPROBS_OFF, null, null, tokens);
    }

    public static GenerationRequest of(String prompt, SamplingOptions sampling) {
        return new GenerationRequest(prompt, sampling, 0, NUM_BATCH_DEFAULT);
    }
}
