package dev.forkpoint.bench.probe;

import java.util.Arrays;
import java.util.List;

/**
 * The samples of one concurrency level and what they add up to. Percentiles are {@link Percentiles}'s; the inter-token
 * latency pools every gap of every sample of the level.
 *
 * @param wallNanos first request sent → last reply done, all clients together
 */
record ProbeLevel(int concurrency, List<ProbeSample> samples, long wallNanos) {

    Percentiles ttft() { return Percentiles.of(samples.stream().mapToDouble(ProbeSample::ttftMillis).toArray()); }

    Percentiles interTokenLatency() {
        return Percentiles.of(samples.stream().flatMapToDouble(s -> Arrays.stream(s.itlMillis())).toArray());
    }

    Percentiles streamTokensPerSecond() {
        return Percentiles.of(samples.stream().mapToDouble(ProbeSample::streamTokensPerSecond).toArray());
    }

    /** All generated tokens over the level's wall time. */
    double aggregateTokensPerSecond() {
        return samples.stream().mapToLong(ProbeSample::evalCount).sum() * 1e9 / wallNanos;
    }

    long promptTokens(int fallback) { return samples.stream().mapToLong(s -> s.promptTokens(fallback)).sum(); }

    long reusedTokens(int fallback) { return samples.stream().mapToLong(s -> s.reusedTokens(fallback)).sum(); }

    long evaluatedTokens() { return samples.stream().mapToLong(s -> Math.max(0, s.promptEvalCount())).sum(); }

    /** Whether every sample carried {@code prompt_cache_count} (reuse is reported, not estimated). */
    boolean reuseReported() { return samples.stream().allMatch(s -> s.promptCacheCount() >= 0); }
}
