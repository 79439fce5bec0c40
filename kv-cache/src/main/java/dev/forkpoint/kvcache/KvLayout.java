package dev.forkpoint.kvcache;

/**
 * The shape of a KV pool: {@code layers} attention layers, {@code kvDim} elements per key (= per value, kvHeads ×
 * headDim), the element type, and {@code pageTokens} positions per page. See {@link PagePool} for the byte layout.
 */
public record KvLayout(int layers, int kvDim, KvElementType elementType, int pageTokens) {

    /** The page size Forkpoint uses (justified in {@link PagePool}). */
    public static final int DEFAULT_PAGE_TOKENS = 16;

    public KvLayout {
        if (layers < 1) throw new IllegalArgumentException("kv layout: layers must be >= 1, got " + layers);
        if (kvDim < 1) throw new IllegalArgumentException("kv layout: kvDim must be >= 1, got " + kvDim);
        if (elementType == null) throw new IllegalArgumentException("kv layout: element type is missing");
        if (pageTokens < 1) throw new IllegalArgumentException("kv layout: pageTokens must be >= 1, got " + pageTokens);
        if (kvDim % elementType.blockElements() != 0) {
            throw new IllegalArgumentException("kv layout: kv type " + elementType.lowerName() + " stores blocks of "
                    + elementType.blockElements() + " elements; kvDim " + kvDim + " is not a multiple of it");
        }
        if ((long) layers * 2 * pageTokens * elementType.rowBytes(kvDim) > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("kv layout: a page of " + pageTokens + " positions × " + layers
                    + " layers × 2 × " + kvDim + " elements does not fit in 2 GiB");
        }
    }

    /** A layout with the default page size. */
    public static KvLayout of(int layers, int kvDim, KvElementType elementType) {
        return new KvLayout(layers, kvDim, elementType, DEFAULT_PAGE_TOKENS);
    }

    /** Bytes of one stored K or V row: kvDim elements of the element type. */
    public long rowBytes() {
        return elementType.rowBytes(kvDim);
    }

    /** Bytes of one (page, layer, kind) slab: pageTokens rows, contiguous. */
    public long slabBytes() {
        return pageTokens * rowBytes();
    }

    /** Bytes of one page: all layers, K and V. */
    public long pageBytes() {
        return slabBytes() * 2 * layers;
    }

    /** KV bytes of one position over all layers, K and V. */
    public long positionBytes() {
        return layers * 2L * rowBytes();
    }

    /**
     * Pool bytes for {@code positions} positions of each of {@code sequences} sequences (whole pages each), e.g.
     * num_ctx × parallel requests: a budget with which those sequences can never exhaust the pool.
     */
    public long budgetFor(int positions, int sequences) {
        return (long) sequences * ((positions + pageTokens - 1L) / pageTokens) * pageBytes();
    }

    /** Byte offset, inside a page, of (slot, layer, kind). */
    long offsetInPage(int slot, int layer, KvKind kind) {
        return (2L * layer + kind.ordinal()) * slabBytes() + slot * rowBytes();
    }
}
