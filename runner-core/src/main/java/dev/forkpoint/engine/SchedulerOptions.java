package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;

/**
 * How a {@link Scheduler} shares one model between requests.
 *
 * @param parallel   sequences evaluated together (decoding or prefilling) at most; others wait in the queue
 * @param queueLimit requests waiting beyond the running ones at most; one more is refused with {@link QueueFullException}
 * @param stepTokens the token budget of one step: the decode tokens of all running sequences plus prefill chunks of
 *                   the others, so running streams keep flowing while a long prompt is prefilled. A prefill chunk
 *                   is never split below the request's own num_batch unless the budget (this, or the time bound) is smaller.
 * @param stepMillis the time bound of a step that has decoding streams: its prefill share is sized (from the measured
 *                   cost of passes) so that the step takes about this long at most, which bounds the streams'
 *                   inter-token latency while a long prompt is prefilled. 0 (the default) means
 *                   {@link #AUTO_STEP_FACTOR} times the decode pass alone, and at least {@link #MIN_AUTO_STEP_MILLIS} ms:
 *                   the streams keep a quarter of their speed or better and the prompt gets three quarters of the time.
 *                   {@link #UNBOUNDED} (−1): no time bound, only the token budget.
 */
public record SchedulerOptions(int parallel, int queueLimit, int stepTokens, int stepMillis) {
    public static final int DEFAULT_PARALLEL = 4;
    public static final int DEFAULT_QUEUE_LIMIT = 512;
    public static final int DEFAULT_STEP_TOKENS = 512;
    /** The automatic step bound never goes below this: shorter steps are not a latency anyone sees. */
    public static final int MIN_AUTO_STEP_MILLIS = 20;
    /**
     * The automatic step bound in decode passes. Measured with {@code bench concurrency} (1B Q4_0, 2 cores, 4 streams, a
     * 100-token prompt each; p95 TTFT over one stream's, longest inter-token gap): 2 passes 5.6× and 0.37 s (the
     * prompts starve), no bound 4.4× and 6.2 s (streams freeze at each arrival), 4 passes 3.3× and 0.37 s.
     */
    public static final int AUTO_STEP_FACTOR = 4;
    /** {@link #stepMillis()}: no time bound (prefill chunks as large as the token budget and num_batch allow). */
    public static final int UNBOUNDED = -1;

    public SchedulerOptions {
        if (parallel < 1) throw new InvalidInputException("parallel must be at least 1, got " + parallel);
        if (queueLimit < 0) throw new InvalidInputException("queue limit must be >= 0, got " + queueLimit);
        if (stepTokens < 1) throw new InvalidInputException("step tokens must be at least 1, got " + stepTokens);
        if (stepMillis < UNBOUNDED) {
            throw new InvalidInputException("step milliseconds must be >= 0 (0: automatic) or -1 (unbounded), got " + stepMillis);
        }
    }

    public static SchedulerOptions defaults() {
        return new SchedulerOptions(DEFAULT_PARALLEL, DEFAULT_QUEUE_LIMIT, DEFAULT_STEP_TOKENS, 0);
    }

    /**
     * One request at a time, its prompt prefilled in chunks of exactly its num_batch (no step token budget, no time
     * bound): the scheduler of {@link LoadedModel#generate} and the CLI's {@code run}.
     */
    public static SchedulerOptions alone() {
        return new SchedulerOptions(1, 0, Integer.MAX_VALUE, UNBOUNDED);
    }

    public SchedulerOptions withParallel(int n) { return new SchedulerOptions(n, queueLimit, stepTokens, stepMillis); }

    public SchedulerOptions withQueueLimit(int n) { return new SchedulerOptions(parallel, n, stepTokens, stepMillis); }

    public SchedulerOptions withStepTokens(int n) { return new SchedulerOptions(parallel, queueLimit, n, stepMillis); }

    public SchedulerOptions withStepMillis(int ms) { return new SchedulerOptions(parallel, queueLimit, stepTokens, ms); }
}
