package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.function.IntConsumer;

/**
 * Qwen3 (dense): the {@link Transformer} without q/k/v biases but with an RMSNorm on every q and k head before RoPE
 * (NeoX layout); the head size ({@code attention.key_length}) may differ from dim / heads.
 */
record Qwen3() implements Architecture.Spec {
    public String name() { return "qwen3"; }

    public boolean ggufNeoxRope() { return true; }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new Transformer(config, ModelWeights.load(tensors, backend, config, new ModelWeights.Parts(false, true), tensorLoaded));
    }
}
