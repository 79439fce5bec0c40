package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.function.IntConsumer;

/** Qwen3-MoE (Qwen3-30B-A3B): attention-only Qwen3 blocks over a mixture of experts, plain RMSNorm weights. */
record Qwen3Moe() implements Architecture.Spec {
    /**
     * A mixture of experts: the router and the stacked experts (Hugging Face's fused {@code experts.gate_up_proj},
     * Ollama's blobs, mlx-lm's {@code switch_mlp}); Qwen3-MoE's checkpoints hold one tensor per expert besides
     * ({@link TensorNames#PER_EXPERT}).
     */
    static final TensorNames EXPERTS = TensorNames.layer(
            "mlp.gate", "ffn_gate_inp",
            "mlp.experts.gate_up_proj", "ffn_gate_up_exps",
            "mlp.experts.gate_proj", "ffn_gate_exps",
            "mlp.experts.up_proj", "ffn_up_exps",
            "mlp.experts.down_proj", "ffn_down_exps",
            "mlp.switch_mlp.gate_proj", "ffn_gate_exps",
            "mlp.switch_mlp.up_proj", "ffn_up_exps",
            "mlp.switch_mlp.down_proj", "ffn_down_exps").and(TensorNames.bare(
            "mlp.experts.gate_up_proj", "ffn_gate_up_exps.weight",
            "mlp.experts.down_proj", "ffn_down_exps.weight"));
    private static final TensorNames NAMES = TensorNames.DECODER.and(EXPERTS, TensorNames.PER_EXPERT);

    public String name() { return "qwen3moe"; }

    public String hfModelType() { return "qwen3_moe"; }

    public boolean ggufNeoxRope() { return true; }

    public TensorNames tensorNames() { return NAMES; }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new HybridTransformer(config, HybridWeights.load(tensors, backend, config, false, tensorLoaded));
    }
}
