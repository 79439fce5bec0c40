package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.Optional;
import java.util.function.IntConsumer;

/** Qwen2 / Qwen2.5: the {@link Transformer} with biases on the q, k and v projections and NeoX RoPE. */
record Qwen2() implements Architecture.Spec {
    private static final ModelWeights.Parts PARTS = new ModelWeights.Parts(true, false);

    public String name() { return "qwen2"; }

    public boolean ggufNeoxRope() { return true; }

    public TensorNames tensorNames() { return TensorNames.DECODER; }

    public Optional<HfLayout> hfLayout() { return Optional.of(HfLayout.dense("Qwen2ForCausalLM", PARTS)); }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new Transformer(config, ModelWeights.load(tensors, backend, config, PARTS, tensorLoaded));
    }
}
