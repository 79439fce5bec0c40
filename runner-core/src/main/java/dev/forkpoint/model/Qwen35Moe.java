package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.Optional;
import java.util.function.IntConsumer;

/** Qwen3.5-MoE / Qwen3.6-35B-A3B: the Qwen3.5 mixers over a mixture of experts with a gated shared expert in every layer. */
record Qwen35Moe() implements Architecture.Spec {
    /** The shared expert and its gate. */
    static final TensorNames SHARED_EXPERT = TensorNames.layer(
            "mlp.shared_expert.gate_proj", "ffn_gate_shexp",
            "mlp.shared_expert.up_proj", "ffn_up_shexp",
            "mlp.shared_expert.down_proj", "ffn_down_shexp",
            "mlp.shared_expert_gate", "ffn_gate_inp_shexp");
    private static final TensorNames NAMES = Qwen35.NAMES.and(Qwen3Moe.EXPERTS, SHARED_EXPERT);

    public String name() { return "qwen35moe"; }

    public String hfModelType() { return "qwen3_5_moe"; }

    public boolean ggufNeoxRope() { return true; }

    public boolean hybrid() { return true; }

    /** Every layer routes and renormalises; config.json's norm_topk_prob, decoder_sparse_step, mlp_only_layers are not read. */
    public ExpertKeys expertKeys() { return new ExpertKeys(true, true); }

    public boolean ggufTiledValueHeads() { return true; }

    public TensorNames tensorNames() { return NAMES; }

    public Optional<HfLayout> hfLayout() { return Optional.of(HfLayout.hybrid("Qwen3_5MoeForConditionalGeneration")); }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new HybridTransformer(config, HybridWeights.load(tensors, backend, config, true, tensorLoaded));
    }
}
