package dev.forkpoint.engine;

/**
 * A scheduler's counts at one moment.
 *
 * @param running         sequences admitted (prefilling or decoding)
 * @param queued          requests waiting for a slot
 * @param steps           batched forward passes so far
 * @param tokensEvaluated prompt tokens evaluated so far (not reused from the cache)
 * @param tokensReused    prompt tokens reused from the prefix cache so far
 * @param tokensGenerated tokens generated so far
 */
public record SchedulerStats(int running, int queued, long steps, long tokensEvaluated, long tokensReused, long tokensGenerated) {}
