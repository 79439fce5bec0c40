package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.Optional;
import java.util.function.IntConsumer;

/** Qwen3.5 (dense): three Gated DeltaNet layers to every gated-attention layer, SwiGLU feed-forward; Hugging Face stores its norms zero-centred. */
record Qwen35() implements Architecture.Spec {
    /** Gated DeltaNet layers, split projections (llama.cpp's names); A_log keeps its own ({@code ssm_a} is −exp(A_log)). */
    static final TensorNames GATED_DELTANET = TensorNames.layer(
            "linear_attn.in_proj_qkv", "attn_qkv",
            "linear_attn.in_proj_z", "attn_gate",
            "linear_attn.in_proj_b", "ssm_beta",
            "linear_attn.in_proj_a", "ssm_alpha",
            "linear_attn.conv1d", "ssm_conv1d",
            "linear_attn.norm", "ssm_norm",
            "linear_attn.out_proj", "ssm_out").and(TensorNames.bare(
            "linear_attn.A_log", "ssm_a_log",
            "linear_attn.dt_bias", "ssm_dt.bias"));
    /** The language model inside a vision-language checkpoint (Hugging Face's and mlx-lm's prefixes). */
    static final TensorNames LANGUAGE_MODEL = TensorNames.prefixes(
            "model.language_model.", "model.",
            "language_model.model.", "model.",
            "language_model.lm_head.", "lm_head.");
    static final TensorNames NAMES = TensorNames.DECODER.and(GATED_DELTANET, LANGUAGE_MODEL);

    public String name() { return "qwen35"; }

    public String hfModelType() { return "qwen3_5"; }

    public boolean ggufNeoxRope() { return true; }

    public boolean hybrid() { return true; }

    public boolean ggufTiledValueHeads() { return true; }

    public TensorNames tensorNames() { return NAMES; }

    public Optional<HfLayout> hfLayout() { return Optional.of(HfLayout.hybrid("Qwen3_5ForConditionalGeneration")); }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new HybridTransformer(config, HybridWeights.load(tensors, backend, config, true, tensorLoaded));
    }
}
