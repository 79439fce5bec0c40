package dev.forkpoint.kvcache;

/**
 * Opaque per-sequence state that cannot be truncated (recurrent layer state, sliding-window contents), captured at one
 * exact token offset. The cache only stores it and accounts {@link #byteSize()} against its checkpoint budget; the
 * engine that captured it restores it. Must be immutable once handed to the cache.
 */
public interface Checkpoint {
    /** Bytes this checkpoint occupies (charged to the cache's checkpoint budget). */
    long byteSize();

    static Checkpoint ofBytes(byte[] bytes) {
        return new BytesCheckpoint(bytes.clone());
    }
}
