package dev.forkpoint.format.hf;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Tensor names of the Hugging Face / mlx-community layout ({@code model.layers.3.self_attn.q_proj.weight}) and their
 * llama.cpp GGUF equivalents ({@code blk.3.attn_q.weight}), for the decoder-only transformers Forkpoint runs (Llama,
 * Qwen2, Qwen3). Suffixes ({@code .weight}, {@code .bias}, and MLX's {@code .scales} / {@code .biases}) carry over.
 * Note the layouts differ in more than names: GGUF stores Llama's q/k rows permuted for adjacent-pair RoPE, Hugging
 * Face in the half-split (NeoX) order; see {@link #llamaRowPermutation}.
 */
public final class HfTensorNames {
    private HfTensorNames() {}

    private static final String[][] GLOBAL = {
            {"model.embed_tokens", "token_embd"},
            {"model.norm", "output_norm"},
            {"lm_head", "output"},
    };
    private static final String[][] LAYER = {
            {"input_layernorm", "attn_norm"},
            {"self_attn.q_proj", "attn_q"},
            {"self_attn.k_proj", "attn_k"},
            {"self_attn.v_proj", "attn_v"},
            {"self_attn.o_proj", "attn_output"},
            {"self_attn.q_norm", "attn_q_norm"},
            {"self_attn.k_norm", "attn_k_norm"},
            {"post_attention_layernorm", "ffn_norm"},
            {"mlp.gate_proj", "ffn_gate"},
            {"mlp.up_proj", "ffn_up"},
            {"mlp.down_proj", "ffn_down"},
    };
    private static final Pattern HF_LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)\\.([a-z_]+)");
    private static final Pattern GGUF_LAYER = Pattern.compile("blk\\.(\\d+)\\.(.+)\\.([a-z_]+)");
    private static final Pattern HF_GLOBAL = Pattern.compile("(.+)\\.([a-z_]+)");

    /** The GGUF name of a Hugging Face tensor name, or empty when it has none (rotary caches, vision towers, …). */
    public static Optional<String> toGguf(String hf) {
        Matcher m = HF_LAYER.matcher(hf);
        if (m.matches()) {
            for (String[] p : LAYER) if (p[0].equals(m.group(2))) return Optional.of("blk." + m.group(1) + "." + p[1] + "." + m.group(3));
            return Optional.empty();
        }
        m = HF_GLOBAL.matcher(hf);
        if (m.matches()) {
            for (String[] p : GLOBAL) if (p[0].equals(m.group(1))) return Optional.of(p[1] + "." + m.group(2));
        }
        return Optional.empty();
    }

    /** The Hugging Face name of a GGUF tensor name, or empty when it has none ({@code rope_freqs.weight}). */
    public static Optional<String> toHf(String gguf) {
        Matcher m = GGUF_LAYER.matcher(gguf);
        if (m.matches()) {
            for (String[] p : LAYER) if (p[1].equals(m.group(2))) return Optional.of("model.layers." + m.group(1) + "." + p[0] + "." + m.group(3));
            return Optional.empty();
        }
        m = HF_GLOBAL.matcher(gguf);
        if (m.matches()) {
            for (String[] p : GLOBAL) if (p[1].equals(m.group(1))) return Optional.of(p[0] + "." + m.group(2));
        }
        return Optional.empty();
    }

    /**
     * The row order llama.cpp's converter gives Llama's q and k projections: GGUF row {@code i} holds Hugging Face row
     * {@code result[i]}. Within each head of {@code headDim} rows, GGUF row 2k+j is HF row j·headDim/2 + k (pairs
     * interleaved instead of split in halves). Its inverse maps the other way.
     */
    public static int[] llamaRowPermutation(int heads, int headDim) {
        int half = headDim / 2;
        int[] hfRow = new int[heads * headDim];
        for (int h = 0; h < heads; h++) {
            for (int k = 0; k < half; k++) {
                for (int j = 0; j < 2; j++) hfRow[h * headDim + 2 * k + j] = h * headDim + j * half + k;
            }
        }
        return hfRow;
    }
}
