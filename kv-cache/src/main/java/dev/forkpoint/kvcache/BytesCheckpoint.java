package dev.forkpoint.kvcache;

/** A checkpoint held as a byte array (the caller must not modify the array afterwards). */
public record BytesCheckpoint(byte[] bytes) implements Checkpoint {
    public BytesCheckpoint {
        if (bytes == null) throw new IllegalArgumentException("checkpoint bytes are missing");
    }

    @Override
    public long byteSize() {
        return bytes.length;
    }
}
