package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.function.IntConsumer;

/** Qwen3-MoE (Qwen3-30B-A3B): attention-only Qwen3 blocks over a mixture of experts, plain RMSNorm weights. */
record Qwen3Moe() implements Architecture.Spec {
    public String name() { return "qwen3moe"; }

    public String hfModelType() { return "qwen3_moe"; }

    public boolean ggufNeoxRope() { return true; }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new HybridTransformer(config, HybridWeights.load(tensors, backend, config, false, tensorLoaded));
    }
}
