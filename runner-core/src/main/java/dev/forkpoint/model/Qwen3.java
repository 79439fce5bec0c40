package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.Optional;
import java.util.function.IntConsumer;

/**
 * Qwen3 (dense): the {@link Transformer} without q/k/v biases but with an RMSNorm on every q and k head before RoPE
 * (NeoX layout); the head size ({@code attention.key_length}) may differ from dim / heads.
 */
record Qwen3() implements Architecture.Spec {
    private static final ModelWeights.Parts PARTS = new ModelWeights.Parts(false, true);

    public String name() { return "qwen3"; }

    public boolean ggufNeoxRope() { return true; }

    public TensorNames tensorNames() { return TensorNames.DECODER; }

    public Optional<HfLayout> hfLayout() { return Optional.of(HfLayout.dense("Qwen3ForCausalLM", PARTS)); }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new Transformer(config, ModelWeights.load(tensors, backend, config, PARTS, tensorLoaded));
    }
}
