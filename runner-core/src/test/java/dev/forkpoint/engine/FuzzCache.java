package dev.forkpoint.engine;

/** For fuzz targets outside the engine package: the prefix cache's pages once everything evictable is evicted. */
public final class FuzzCache {
    private FuzzCache() {}

    /**
     * Evicts every cached prefix of {@code model} (call only while nothing runs on it) and returns the KV pages still
     * in use: 0 unless a finished or refused request left pages or locks behind.
     */
    public static int pagesLeftAfterEvictingAll(LoadedModel model) {
        model.cache().evictAll();
        return model.pool().usedPages();
    }
}
