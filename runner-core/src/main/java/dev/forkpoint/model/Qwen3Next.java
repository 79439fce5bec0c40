package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.function.IntConsumer;

/** Qwen3-Next: Qwen3.5-MoE's math with the fused Gated DeltaNet projections (in_proj_qkvz, in_proj_ba grouped per key head). */
record Qwen3Next() implements Architecture.Spec {
    /** The fused Gated DeltaNet projections, grouped per key head. */
    static final TensorNames FUSED_DELTANET = TensorNames.layer(
            "linear_attn.in_proj_qkvz", "ssm_in",
            "linear_attn.in_proj_ba", "ssm_ba");
    private static final TensorNames NAMES = TensorNames.DECODER.and(FUSED_DELTANET, Qwen35.GATED_DELTANET,
            Qwen3Moe.EXPERTS, TensorNames.PER_EXPERT, Qwen35Moe.SHARED_EXPERT);

    public String name() { return "qwen3next"; }

    public String hfModelType() { return "qwen3_next"; }

    public boolean ggufNeoxRope() { return true; }

    public boolean hybrid() { return true; }

    /** config.json's norm_topk_prob defaults to true. */
    public ExpertKeys expertKeys() { return new ExpertKeys(false, true); }

    public TensorNames tensorNames() { return NAMES; }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new HybridTransformer(config, HybridWeights.load(tensors, backend, config, true, tensorLoaded));
    }
}
