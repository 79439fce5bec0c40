package dev.forkpoint.kvcache;

/** Which half of an attention cache entry: the key or the value. */
public enum KvKind {
    KEY,
    VALUE
}
