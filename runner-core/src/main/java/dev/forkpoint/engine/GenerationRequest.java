package dev.forkpoint.engine;

import dev.forkpoint.sampling.SamplingOptions;

/**
 * One completion: a raw prompt (no chat template applied), sampling options, and the context limits.
 *
 * @param numCtx            the context window in tokens (prompt + generated); 0 = {@link LoadedModel#defaultNumCtx()}
 *                          (Ollama's 4096, or the model's trained context when that is smaller); above the trained
 *                          context it is refused naming num_ctx
 * @param numBatch          prefill chunk size in tokens, 1 … num_ctx; {@link #NUM_BATCH_DEFAULT} when the user set none
 *                          (512, or num_ctx when that is smaller); anything else is refused naming num_batch
 * @param messageBoundaries token offsets into the encoded prompt (BOS included) where chat messages end, ascending,
 *                          each in [1, prompt tokens]; the prefix cache keeps fork points (checkpoints of
 *                          non-truncatable state) there. Empty = none. Not copied: do not modify it afterwards.
 * @param cacheSalt         a tenant key: prompts share cached prefixes only with requests of the same salt ("" = the
 *                          shared cache)
 */
public record GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch,
                                int[] messageBoundaries, String cacheSalt) {
    public static final int DEFAULT_NUM_BATCH = 512;
    /** numBatch when the user gave none. */
    public static final int NUM_BATCH_DEFAULT = Integer.MIN_VALUE;

    private static final int[] NONE = new int[0];

    public GenerationRequest {
        if (messageBoundaries == null) messageBoundaries = NONE;
        if (cacheSalt == null) cacheSalt = "";
    }

    /** A request without message boundaries, in the shared cache. */
    public GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch) {
        this(prompt, sampling, numCtx, numBatch, NONE, "");
    }

    /** The prefill chunk size this request asks for, given the context it runs in. */
    public int numBatchFor(int numCtx) {
        return numBatch == NUM_BATCH_DEFAULT ? Math.min(DEFAULT_NUM_BATCH, numCtx) : numBatch;
    }

    public GenerationRequest withMessageBoundaries(int... boundaries) {
        return new GenerationRequest(prompt, sampling, numCtx, numBatch, boundaries, cacheSalt);
    }

    public GenerationRequest withCacheSalt(String salt) {
        return new GenerationRequest(prompt, sampling, numCtx, numBatch, messageBoundaries, salt);
    }

    public static GenerationRequest of(String prompt, SamplingOptions sampling) {
        return new GenerationRequest(prompt, sampling, 0, NUM_BATCH_DEFAULT);
    }
}
