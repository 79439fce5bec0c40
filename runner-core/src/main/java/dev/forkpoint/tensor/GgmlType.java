package dev.forkpoint.tensor;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The tensor element types of the GGML family of formats, with their GGUF ids and block layouts.
 * Every type GGUF can name is listed so that files can be described; {@link #supported()} says which
 * ones the kernels can compute with.
 */
public enum GgmlType {
    F32(0, 1, 4, true),
    F16(1, 1, 2, true),
    Q4_0(2, 32, 18, true),
    Q4_1(3, 32, 20, false),
    Q5_0(6, 32, 22, false),
    Q5_1(7, 32, 24, false),
    Q8_0(8, 32, 34, true),
    Q8_1(9, 32, 36, false),
    Q2_K(10, 256, 84, false),
    Q3_K(11, 256, 110, false),
    Q4_K(12, 256, 144, true),
    Q5_K(13, 256, 176, false),
    Q6_K(14, 256, 210, true),
    Q8_K(15, 256, 292, false),
    IQ2_XXS(16, 256, 66, false),
    IQ2_XS(17, 256, 74, false),
    IQ3_XXS(18, 256, 98, false),
    IQ1_S(19, 256, 50, false),
    IQ4_NL(20, 32, 18, false),
    IQ3_S(21, 256, 110, false),
    IQ2_S(22, 256, 82, false),
    IQ4_XS(23, 256, 136, false),
    I8(24, 1, 1, false),
    I16(25, 1, 2, false),
    I32(26, 1, 4, false),
    I64(27, 1, 8, false),
    F64(28, 1, 8, false),
    IQ1_M(29, 256, 56, false),
    BF16(30, 1, 2, true),
    TQ1_0(34, 256, 54, false),
    TQ2_0(35, 256, 66, false),
    MXFP4(39, 32, 17, false);

    private final int id;
    private final int blockSize;
    private final int blockBytes;
    private final boolean supported;

    GgmlType(int id, int blockSize, int blockBytes, boolean supported) {
        this.id = id;
        this.blockSize = blockSize;
        this.blockBytes = blockBytes;
        this.supported = supported;
    }

    /** The id GGUF stores for this type. */
    public int id() { return id; }
    /** Elements per block (1 for plain types). */
    public int blockSize() { return blockSize; }
    /** Bytes per block. */
    public int blockBytes() { return blockBytes; }
    /** Whether the CPU kernels can compute with this type. */
    public boolean supported() { return supported; }

    /** Bytes taken by {@code elements} elements, which must be a whole number of blocks. */
    public long bytesFor(long elements) {
        if (elements % blockSize != 0) {
            throw new IllegalArgumentException(this + " needs a multiple of " + blockSize + " elements, got " + elements);
        }
        return Math.multiplyExact(elements / blockSize, (long) blockBytes);
    }

    /** The type with GGUF id {@code id}, or null when GGUF defines none. */
    public static GgmlType byId(int id) {
        for (GgmlType t : values()) {
            if (t.id == id) return t;
        }
        return null;
    }

    public static List<GgmlType> supportedTypes() {
        return Arrays.stream(values()).filter(GgmlType::supported).toList();
    }

    /** "F32, F16, BF16, …": for error messages that list what is supported. */
    public static String supportedNames() {
        return supportedTypes().stream().map(Enum::name).collect(Collectors.joining(", "));
    }

    /** Parses a type name case-insensitively ("q8_0", "Q4_K"). */
    public static GgmlType parse(String name) {
        for (GgmlType t : values()) {
            if (t.name().equalsIgnoreCase(name)) return t;
        }
        throw new IllegalArgumentException("unknown tensor type '" + name + "'");
    }
}
