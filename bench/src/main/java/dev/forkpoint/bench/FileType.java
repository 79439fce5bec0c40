package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tensor.GgmlType;

/**
 * The weight encodings {@code generate} can write, with llama.cpp's {@code general.file_type} ids. Norms and RoPE
 * factors stay F32 in all of them.
 */
enum FileType {
    F16("f16", 1),
    Q8_0("q8_0", 7),
    Q4_0("q4_0", 2),
    /**
     * llama.cpp's Q4_K_M recipe, simplified: Q6_K for the (tied) token embedding and for {@code attn_v} and
     * {@code ffn_down} in the layers {@link #moreBitsLayer} picks (half of them), Q4_K everywhere else.
     */
    Q4_K_M("q4_k_m", 15);

    private final String cliName;
    private final int ggufId;

    FileType(String cliName, int ggufId) {
        this.cliName = cliName;
        this.ggufId = ggufId;
    }

    String cliName() { return cliName; }

    int ggufId() { return ggufId; }

    static FileType parse(String name) {
        for (FileType t : values()) {
            if (t.cliName.equalsIgnoreCase(name)) return t;
        }
        throw new InvalidInputException("unknown file type '" + name + "' (known: f16, q8_0, q4_0, q4_k_m)");
    }

    /** The encoding of a tensor with {@code role} in {@code layer} of {@code layers}. */
    GgmlType typeOf(TensorRole role, int layer, int layers) {
        if (role.alwaysF32()) return GgmlType.F32;
        return switch (this) {
            case F16 -> GgmlType.F16;
            case Q8_0 -> GgmlType.Q8_0;
            case Q4_0 -> GgmlType.Q4_0;
            case Q4_K_M -> switch (role) {
                case TOKEN_EMBD -> GgmlType.Q6_K;
                case ATTN_V, FFN_DOWN -> moreBitsLayer(layer, layers) ? GgmlType.Q6_K : GgmlType.Q4_K;
                default -> GgmlType.Q4_K;
            };
        };
    }

    /** The first and last eighth of the layers and every third layer between them (8 of 16 for Llama-3.2-1B). */
    static boolean moreBitsLayer(int layer, int layers) {
        int eighth = layers / 8;
        return layer < eighth || layer >= layers - eighth || (layer - eighth) % 3 == 2;
    }
}
