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
            // Qwen3.5 / Qwen3-Next: Gated DeltaNet layers (llama.cpp's names)
            {"linear_attn.in_proj_qkv", "attn_qkv"},
            {"linear_attn.in_proj_z", "attn_gate"},
            {"linear_attn.in_proj_b", "ssm_beta"},
            {"linear_attn.in_proj_a", "ssm_alpha"},
            {"linear_attn.in_proj_qkvz", "ssm_in"},
            {"linear_attn.in_proj_ba", "ssm_ba"},
            {"linear_attn.conv1d", "ssm_conv1d"},
            {"linear_attn.norm", "ssm_norm"},
            {"linear_attn.out_proj", "ssm_out"},
            // mixtures of experts: router, stacked experts (Ollama's blobs, mlx-lm's switch_mlp), shared expert
            {"mlp.gate", "ffn_gate_inp"},
            {"mlp.experts.gate_up_proj", "ffn_gate_up_exps"},
            {"mlp.experts.gate_proj", "ffn_gate_exps"},
            {"mlp.experts.up_proj", "ffn_up_exps"},
            {"mlp.experts.down_proj", "ffn_down_exps"},
            {"mlp.switch_mlp.gate_proj", "ffn_gate_exps"},
            {"mlp.switch_mlp.up_proj", "ffn_up_exps"},
            {"mlp.switch_mlp.down_proj", "ffn_down_exps"},
            {"mlp.shared_expert.gate_proj", "ffn_gate_shexp"},
            {"mlp.shared_expert.up_proj", "ffn_up_shexp"},
            {"mlp.shared_expert.down_proj", "ffn_down_shexp"},
            {"mlp.shared_expert_gate", "ffn_gate_inp_shexp"},
    };
    /**
     * Layer tensors that Hugging Face names without a {@code .weight} suffix. {@code A_log} keeps its own name
     * ({@code ssm_a_log}): llama.cpp's {@code ssm_a} holds −exp(A_log), a different value.
     */
    private static final String[][] BARE = {
            {"linear_attn.A_log", "ssm_a_log"},
            {"linear_attn.dt_bias", "ssm_dt.bias"},
            {"mlp.experts.gate_up_proj", "ffn_gate_up_exps.weight"},
            {"mlp.experts.down_proj", "ffn_down_exps.weight"},
    };
    /** Prefixes that stand for {@code model.}: Qwen3.5's language model inside a vision-language checkpoint (HF, mlx-lm). */
    private static final String[][] PREFIXES = {
            {"model.language_model.", "model."},
            {"language_model.model.", "model."},
            {"language_model.lm_head.", "lm_head."},
    };
    private static final Pattern HF_LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)\\.([a-z_]+)");
    private static final Pattern GGUF_LAYER = Pattern.compile("blk\\.(\\d+)\\.(.+)\\.([a-z_]+)");
    private static final Pattern HF_EXPERT = Pattern.compile("model\\.layers\\.(\\d+)\\.mlp\\.experts\\.(\\d+)\\.(gate|up|down)_proj\\.([a-z_]+)");
    private static final Pattern HF_LAYER_BARE = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");
    private static final Pattern GGUF_LAYER_BARE = Pattern.compile("blk\\.(\\d+)\\.(.+)");
    private static final Pattern HF_GLOBAL = Pattern.compile("(.+)\\.([a-z_]+)");

    /** The GGUF name of a Hugging Face tensor name, or empty when it has none (rotary caches, vision towers, …). */
    public static Optional<String> toGguf(String name) {
        String hf = canonical(name);
        Matcher expert = HF_EXPERT.matcher(hf);   // Hugging Face's per-expert tensors (Qwen3-MoE, Qwen3-Next)
        if (expert.matches()) {
            return Optional.of("blk." + expert.group(1) + ".ffn_" + expert.group(3) + "_exps." + expert.group(2) + "." + expert.group(4));
        }
        Matcher bare = HF_LAYER_BARE.matcher(hf);
        if (bare.matches()) {
            for (String[] p : BARE) if (p[0].equals(bare.group(2))) return Optional.of("blk." + bare.group(1) + "." + p[1]);
        }
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

    /**
     * The name with a vision-language checkpoint's language-model prefix ({@code model.language_model.}, mlx-lm's
     * {@code language_model.model.}) replaced by {@code model.} ({@code lm_head.} for the output); others as they are.
     */
    public static String canonical(String name) {
        for (String[] p : PREFIXES) if (name.startsWith(p[0])) return p[1] + name.substring(p[0].length());
        return name;
    }

    /** The Hugging Face name of a GGUF tensor name, or empty when it has none ({@code rope_freqs.weight}). */
    public static Optional<String> toHf(String gguf) {
        Matcher bare = GGUF_LAYER_BARE.matcher(gguf);
        if (bare.matches()) {
            for (String[] p : BARE) if (p[1].equals(bare.group(2))) return Optional.of("model.layers." + bare.group(1) + "." + p[0]);
        }
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
