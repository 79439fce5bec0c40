package dev.forkpoint.bench.probe;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One streamed completion as the client saw it: when the request was sent, when each chunk carrying text arrived
 * ({@link System#nanoTime()}), when the final chunk arrived, and the final chunk itself (Ollama's counters).
 */
record ServerReply(long sentNanos, long[] textChunkNanos, long doneNanos, JsonNode done) {

    /** {@code prompt_eval_count} of the final chunk, or -1 when the server sent none. */
    int promptEvalCount() { return done.path("prompt_eval_count").asInt(-1); }

    /** Forkpoint's {@code prompt_cache_count} (prompt tokens reused from its prefix cache), or null when absent. */
    Integer promptCacheCount() { return done.hasNonNull("prompt_cache_count") ? done.get("prompt_cache_count").asInt() : null; }

    /** {@code eval_count} (generated tokens), or the number of text chunks when the server sent none. */
    int evalCount() { return done.hasNonNull("eval_count") ? done.get("eval_count").asInt() : textChunkNanos.length; }

    /** {@code eval_duration} in ns, or -1. */
    long evalDurationNanos() { return done.path("eval_duration").asLong(-1); }

    /** {@code load_duration} in ns, or -1. */
    long loadDurationNanos() { return done.path("load_duration").asLong(-1); }

    String doneReason() { return done.path("done_reason").asText(""); }
}
