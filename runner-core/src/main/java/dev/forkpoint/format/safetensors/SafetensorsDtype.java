package dev.forkpoint.format.safetensors;

import dev.forkpoint.tensor.GgmlType;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The element types a safetensors header can name, with their sizes. {@link #readable()} says which ones Forkpoint
 * loads (F32, F16, BF16 for plain tensors; U32 for MLX's packed codes; I8 and U8); the others are named in errors.
 */
public enum SafetensorsDtype {
    BOOL(1, false), U8(1, true), I8(1, true), F8_E4M3(1, false), F8_E5M2(1, false), F8_E8M0(1, false),
    I16(2, false), U16(2, false), F16(2, true), BF16(2, true),
    I32(4, false), U32(4, true), F32(4, true),
    I64(8, false), U64(8, false), F64(8, false);

    private final int bytes;
    private final boolean readable;

    SafetensorsDtype(int bytes, boolean readable) {
        this.bytes = bytes;
        this.readable = readable;
    }

    public int bytes() { return bytes; }

    public boolean readable() { return readable; }

    /** The GGML type of the same encoding (F32, F16, BF16), or null for the others. */
    public GgmlType ggmlType() {
        return switch (this) {
            case F32 -> GgmlType.F32;
            case F16 -> GgmlType.F16;
            case BF16 -> GgmlType.BF16;
            default -> null;
        };
    }

    /** The dtype for a GGML float type (F32, F16, BF16). */
    public static SafetensorsDtype of(GgmlType type) {
        return switch (type) {
            case F32 -> F32;
            case F16 -> F16;
            case BF16 -> BF16;
            default -> throw new IllegalArgumentException("safetensors has no dtype for " + type);
        };
    }

    /** The dtype named {@code name} exactly as in a header ("F32", "BF16"), or null when safetensors defines none. */
    static SafetensorsDtype byName(String name) {
        for (SafetensorsDtype d : values()) if (d.name().equals(name)) return d;
        return null;
    }

    static String readableNames() {
        return Arrays.stream(values()).filter(SafetensorsDtype::readable).map(Enum::name).collect(Collectors.joining(", "));
    }
}
