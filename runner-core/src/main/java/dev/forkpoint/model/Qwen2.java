package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.function.IntConsumer;

/** Qwen2 / Qwen2.5: the {@link Transformer} with biases on the q, k and v projections and NeoX RoPE. */
record Qwen2() implements Architecture.Spec {
    public String name() { return "qwen2"; }

    public boolean ggufNeoxRope() { return true; }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new Transformer(config, ModelWeights.load(tensors, backend, config, new ModelWeights.Parts(true, false), tensorLoaded));
    }
}
