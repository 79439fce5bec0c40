package dev.forkpoint.engine;

/**
 * A scheduler's counts at one moment.
 *
 * @param running         sequences admitted (prefilling or decoding)
 * @param queued          requests waiting for a slot
 * @param steps           forward passes so far (a step runs one pass over all decoding sequences, one per prefill chunk)
 * @param tokensEvaluated prompt tokens evaluated so far (not reused from the cache)
 * @param tokensReused    prompt tokens reused from the prefix cache so far
 * @param tokensGenerated tokens generated so far
 * @param kvPagesUsed     KV pages in use: held by the prefix cache or by live sequences
 * @param kvPagesFree     KV pages free in the pool
 * @param kvPagesTotal    KV pages in the pool (its budget)
 * @param kvPagesLive     pages in the page tables of live (admitted, unfinished) sequences, shared prefix pages included;
 *                        0 when nothing runs
 * @param kvPagesReserved pages the running sequences may still allocate in their worst case (kept free for them)
 */
public record SchedulerStats(int running, int queued, long steps, long tokensEvaluated, long tokensReused, long tokensGenerated,
                             int kvPagesUsed, int kvPagesFree, int kvPagesTotal, int kvPagesLive, int kvPagesReserved) {}
