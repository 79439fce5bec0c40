package dev.forkpoint.kvcache;

/**
 * A separate radix tree: one per model (its id, e.g. the weights' sha256) and cache salt (a tenant key; "" for the
 * shared cache). Prefixes never match across namespaces.
 */
public record CacheNamespace(String modelId, String cacheSalt) {
    public CacheNamespace {
        if (modelId == null || modelId.isEmpty()) throw new IllegalArgumentException("cache namespace: model id is missing");
        if (cacheSalt == null) cacheSalt = "";
    }

    public static CacheNamespace of(String modelId) {
        return new CacheNamespace(modelId, "");
    }
}
