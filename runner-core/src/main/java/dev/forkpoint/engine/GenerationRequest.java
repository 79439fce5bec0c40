package dev.forkpoint.engine;

import dev.forkpoint.sampling.SamplingOptions;

/**
 * One completion: a raw prompt (no chat template applied), sampling options, and the context limits.
 *
 * @param numCtx   the context window in tokens (prompt + generated); 0 = the model's trained context
 * @param numBatch prefill chunk size in tokens, 1 … num_ctx; {@link #NUM_BATCH_DEFAULT} when the user set none
 *                 (512, or num_ctx when that is smaller); anything else is refused naming num_batch
 */
public record GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch) {
    public static final int DEFAULT_NUM_BATCH = 512;
    /** numBatch when the user gave none. */
    public static final int NUM_BATCH_DEFAULT = Integer.MIN_VALUE;

    /** The prefill chunk size this request asks for, given the context it runs in. */
    public int numBatchFor(int numCtx) {
        return numBatch == NUM_BATCH_DEFAULT ? Math.min(DEFAULT_NUM_BATCH, numCtx) : numBatch;
    }

    public static GenerationRequest of(String prompt, SamplingOptions sampling) {
        return new GenerationRequest(prompt, sampling, 0, NUM_BATCH_DEFAULT);
    }
}
