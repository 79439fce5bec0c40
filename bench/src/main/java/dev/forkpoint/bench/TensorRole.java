package dev.forkpoint.bench;

/** What a tensor of a Llama-architecture GGUF is for, with its llama.cpp name. */
enum TensorRole {
    TOKEN_EMBD("token_embd"),
    ROPE_FREQS("rope_freqs"),
    ATTN_NORM("attn_norm"),
    ATTN_Q("attn_q"),
    ATTN_K("attn_k"),
    ATTN_V("attn_v"),
    ATTN_OUTPUT("attn_output"),
    FFN_NORM("ffn_norm"),
    FFN_GATE("ffn_gate"),
    FFN_UP("ffn_up"),
    FFN_DOWN("ffn_down"),
    OUTPUT_NORM("output_norm");

    private final String stem;

    TensorRole(String stem) {
        this.stem = stem;
    }

    boolean perLayer() {
        return this != TOKEN_EMBD && this != ROPE_FREQS && this != OUTPUT_NORM;
    }

    /** Kept in F32 whatever the file type: norm weights and RoPE factors. */
    boolean alwaysF32() {
        return this == ROPE_FREQS || this == ATTN_NORM || this == FFN_NORM || this == OUTPUT_NORM;
    }

    String tensorName(int layer) {
        return perLayer() ? "blk." + layer + "." + stem + ".weight" : stem + ".weight";
    }
}
