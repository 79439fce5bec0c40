package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.format.gguf.GgufFile;

import java.util.function.IntConsumer;

/**
 * Qwen3 (dense): the {@link Transformer} without q/k/v biases but with an RMSNorm on every q and k head before RoPE
 * (NeoX layout); the head size ({@code attention.key_length}) may differ from dim / heads.
 */
record Qwen3() implements Architecture.Spec {
    public String name() { return "qwen3"; }

    public Architecture load(GgufFile f, Backend backend, IntConsumer tensorLoaded) {
        ModelConfig config = ModelConfig.fromGguf(f, name(), true);
        return new Transformer(config, ModelWeights.load(f, backend, config, new ModelWeights.Parts(false, true), tensorLoaded));
    }
}
