package dev.forkpoint.engine;

import dev.forkpoint.sampling.SamplingOptions;

/**
 * One completion: a raw prompt (no chat template applied), sampling options, and the context limits.
 *
 * @param numCtx   the context window in tokens (prompt + generated); 0 = the model's trained context
 * @param numBatch prefill chunk size in tokens (Ollama's default 512)
 */
public record GenerationRequest(String prompt, SamplingOptions sampling, int numCtx, int numBatch) {
    public static final int DEFAULT_NUM_BATCH = 512;

    public static GenerationRequest of(String prompt, SamplingOptions sampling) {
        return new GenerationRequest(prompt, sampling, 0, DEFAULT_NUM_BATCH);
    }
}
