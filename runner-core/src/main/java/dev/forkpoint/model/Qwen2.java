package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.format.gguf.GgufFile;

import java.util.function.IntConsumer;

/** Qwen2 / Qwen2.5: the {@link Transformer} with biases on the q, k and v projections and NeoX RoPE. */
record Qwen2() implements Architecture.Spec {
    public String name() { return "qwen2"; }

    public Architecture load(GgufFile f, Backend backend, IntConsumer tensorLoaded) {
        ModelConfig config = ModelConfig.fromGguf(f, name(), true);
        return new Transformer(config, ModelWeights.load(f, backend, config, new ModelWeights.Parts(true, false), tensorLoaded));
    }
}
