package dev.forkpoint.bench.probe;

/**
 * One request as the probe saw it, in milliseconds.
 *
 * @param concurrency     the level it ran at (0 for the cold call)
 * @param index           its number within the level (0 …)
 * @param ttftMillis      request sent → first chunk carrying text
 * @param totalMillis     request sent → final chunk
 * @param itlMillis       the gaps between successive text chunks (one chunk per token on Ollama and Forkpoint,
 *                        except where a multi-byte character or a possible stop string is held back)
 * @param evalCount       generated tokens ({@code eval_count}, else the text chunks)
 * @param promptEvalCount prompt tokens the server evaluated ({@code prompt_eval_count}), -1 when not sent
 * @param promptCacheCount prompt tokens reused from the server's prefix cache (Forkpoint's {@code prompt_cache_count}),
 *                        -1 when the server does not send it (Ollama)
 * @param evalDurationMillis the server's {@code eval_duration}, NaN when not sent
 * @param doneReason      {@code done_reason}
 */
record ProbeSample(int concurrency, int index, double ttftMillis, double totalMillis, double[] itlMillis, int evalCount,
                   int promptEvalCount, int promptCacheCount, double evalDurationMillis, String doneReason) {

    static ProbeSample of(int concurrency, int index, ServerReply r) {
        long[] t = r.textChunkNanos();
        double ttft = t.length == 0 ? Double.NaN : (t[0] - r.sentNanos()) / 1e6;
        double[] itl = new double[Math.max(0, t.length - 1)];
        for (int i = 1; i < t.length; i++) itl[i - 1] = (t[i] - t[i - 1]) / 1e6;
        Integer cache = r.promptCacheCount();
        long evalNanos = r.evalDurationNanos();
        return new ProbeSample(concurrency, index, ttft, (r.doneNanos() - r.sentNanos()) / 1e6, itl, r.evalCount(),
                r.promptEvalCount(), cache == null ? -1 : cache, evalNanos < 0 ? Double.NaN : evalNanos / 1e6, r.doneReason());
    }

    /** First text chunk → last text chunk. */
    double decodeMillis() {
        double sum = 0;
        for (double d : itlMillis) sum += d;
        return sum;
    }

    /**
     * The stream's own generation rate: the tokens after the first over the time from the first text chunk to the
     * last; NaN for a reply of fewer than two chunks.
     */
    double streamTokensPerSecond() {
        double d = decodeMillis();
        return itlMillis.length == 0 || d <= 0 ? Double.NaN : (evalCount - 1) * 1000.0 / d;
    }

    /** Prompt size: evaluated + reused when the server reports reuse, else {@code fallback} (the cold call's). */
    int promptTokens(int fallback) {
        return promptCacheCount >= 0 ? promptEvalCount + promptCacheCount : fallback;
    }

    /** Prompt tokens reused: reported, or estimated as {@code fallback} − evaluated (never below 0). */
    int reusedTokens(int fallback) {
        return promptCacheCount >= 0 ? promptCacheCount : Math.max(0, fallback - Math.max(0, promptEvalCount));
    }
}
