package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.function.IntConsumer;

/** Qwen3-Next: Qwen3.5-MoE's math with the fused Gated DeltaNet projections (in_proj_qkvz, in_proj_ba grouped per key head). */
record Qwen3Next() implements Architecture.Spec {
    public String name() { return "qwen3next"; }

    public String hfModelType() { return "qwen3_next"; }

    public boolean ggufNeoxRope() { return true; }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new HybridTransformer(config, HybridWeights.load(tensors, backend, config, true, tensorLoaded));
    }
}
