package dev.forkpoint.kvcache;

/**
 * A snapshot of the cache: tree size, the estimated heap bytes of its metadata (token ids, page ids, nodes), its
 * checkpoints, and the pool's pages. {@code evictedCheckpoints} counts stored checkpoints removed since the cache was
 * made, least recently used first to make room for a newer one or together with their evicted node;
 * {@code refusedCheckpoints} counts those never stored because they alone exceed the checkpoint budget.
 */
public record CacheStats(int nodes, long cachedTokens, long metadataBytes, int checkpoints, long checkpointBytes,
                         long checkpointBudgetBytes, int usedPages, int freePages, int totalPages, long usedBytes,
                         long budgetBytes, long evictedNodes, long evictedCheckpoints, long refusedCheckpoints) {

    /** Estimated metadata bytes per cached token (goal ≤ 8). */
    public double metadataBytesPerToken() {
        return cachedTokens == 0 ? 0 : (double) metadataBytes / cachedTokens;
    }
}
