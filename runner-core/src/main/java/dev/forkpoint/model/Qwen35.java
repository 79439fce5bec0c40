package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.Optional;
import java.util.function.IntConsumer;

/** Qwen3.5 (dense): three Gated DeltaNet layers to every gated-attention layer, SwiGLU feed-forward; Hugging Face stores its norms zero-centred. */
record Qwen35() implements Architecture.Spec {
    public String name() { return "qwen35"; }

    public String hfModelType() { return "qwen3_5"; }

    public boolean ggufNeoxRope() { return true; }

    public Optional<HfLayout> hfLayout() { return Optional.of(HfLayout.hybrid("Qwen3_5ForConditionalGeneration")); }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new HybridTransformer(config, HybridWeights.load(tensors, backend, config, true, tensorLoaded));
    }
}
