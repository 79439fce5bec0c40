package dev.forkpoint.kvcache;

/**
 * A snapshot of the cache: tree size, the estimated heap bytes of its metadata (token ids, page ids, nodes), its
 * checkpoints, and the pool's pages.
 */
public record CacheStats(int nodes, long cachedTokens, long metadataBytes, int checkpoints, long checkpointBytes,
                         long checkpointBudgetBytes, int usedPages, int freePages, int totalPages, long usedBytes,
                         long budgetBytes, long evictedNodes) {

    /** Estimated metadata bytes per cached token (goal ≤ 8). */
    public double metadataBytesPerToken() {
        return cachedTokens == 0 ? 0 : (double) metadataBytes / cachedTokens;
    }
}
