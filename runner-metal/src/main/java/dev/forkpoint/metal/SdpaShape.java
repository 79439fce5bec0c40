package dev.forkpoint.metal;

/**
 * The shape of one decode-shaped attention call, per KV head: {@code gqa} query heads share the KV head, each with
 * {@code queryRows} query rows (1 for plain decode, more for speculative verify), over {@code keyLength} keys of
 * {@code headDim} elements of {@code dtypeBytes} bytes each (2 for f16/bf16, 4 for f32).
 */
public record SdpaShape(int gqa, int queryRows, int headDim, int keyLength, int dtypeBytes) {

    public SdpaShape {
        if (gqa < 1 || queryRows < 1 || headDim < 1 || keyLength < 1) {
            throw new IllegalArgumentException("SDPA shape must be positive: gqa " + gqa + ", query rows " + queryRows
                    + ", head dim " + headDim + ", key length " + keyLength);
        }
        if (dtypeBytes != 1 && dtypeBytes != 2 && dtypeBytes != 4) {
            throw new IllegalArgumentException("dtype bytes must be 1, 2 or 4, got " + dtypeBytes);
        }
    }

    /** (query head, query row) pairs per KV head: the units every plan covers exactly once. */
    public int pairs() {
        return gqa * queryRows;
    }

    @Override
    public String toString() {
        return "gqa " + gqa + ", query rows " + queryRows + ", head dim " + headDim + ", key length " + keyLength
                + ", " + dtypeBytes + "-byte elements";
    }
}
