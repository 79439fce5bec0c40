package dev.forkpoint.kvcache;

/**
 * How K and V elements are stored in the pool: a row of {@code kvDim} elements is cut into blocks of
 * {@link #blockElements()} elements of {@link #blockBytes()} bytes each.
 * <ul>
 * <li>F32: one IEEE binary32 per element.</li>
 * <li>F16: one IEEE binary16 per element (converted with {@link Float#floatToFloat16}).</li>
 * <li>Q8_0: blocks of 32: a binary16 scale d, then 32 signed bytes q; element i is d·q[i] (GGUF's Q8_0 block).</li>
 * <li>Q4_0: blocks of 32: a binary16 scale d, then 16 bytes; byte j holds element j in its low nibble and element
 *     j + 16 in its high nibble, each as q + 8 with q in [−8, 7]; element i is d·q[i] (GGUF's Q4_0 block).</li>
 * </ul>
 * How rows are quantised, and the error that costs, is {@link KvRowCodec}'s.
 */
public enum KvElementType {
    F32(1, 4),
    F16(1, 2),
    Q8_0(32, 34),
    Q4_0(32, 18);

    private final int blockElements;
    private final int blockBytes;

    KvElementType(int blockElements, int blockBytes) {
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
    }

    /** Elements per block (1 for the float types, 32 for the quantised ones). */
    public int blockElements() {
        return blockElements;
    }

    /** Bytes of one block. */
    public int blockBytes() {
        return blockBytes;
    }

    /** Whether elements are stored as blocks of small integers with a scale (Q8_0, Q4_0). */
    public boolean quantised() {
        return blockElements > 1;
    }

    /** Bytes of a row of {@code elements} elements; refused when they are not whole blocks. */
    public long rowBytes(int elements) {
        if (elements % blockElements != 0) {
            throw new IllegalArgumentException("kv type " + lowerName() + " stores rows in blocks of " + blockElements
                    + " elements; a row of " + elements + " is not a whole number of blocks");
        }
        return (long) elements / blockElements * blockBytes;
    }

    /** The name as Ollama spells it (f32, f16, q8_0, q4_0). */
    public String lowerName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
