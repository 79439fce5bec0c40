package dev.forkpoint.kvcache;

/** How one K or V element is stored in the pool. F16 is IEEE 754 binary16 (converted with {@link Float#floatToFloat16}). */
public enum KvElementType {
    F32(4),
    F16(2);

    private final int bytes;

    KvElementType(int bytes) {
        this.bytes = bytes;
    }

    /** Bytes of one element. */
    public int bytes() {
        return bytes;
    }
}
