package dev.forkpoint.model;

/**
 * What converting an architecture between Hugging Face / MLX folders and GGUF needs to know beyond the tensor names
 * ({@link Architecture.Spec#tensorNames()}): config.json's architecture class, which optional weights a dense
 * layer carries, and whether it is a hybrid, whose config.json the converter carries over as it is and which it
 * writes to MLX only. An architecture without one ({@link Architecture.Spec#hfLayout()} empty) is not converted.
 *
 * @param architectureClass config.json's {@code architectures} entry ("LlamaForCausalLM")
 * @param qkvBias           whether every attention layer has q, k and v projection biases ({@code attention_bias})
 * @param qkNorm            whether every attention layer has q and k head norms
 * @param hybrid            Gated DeltaNet and gated-attention layers (Qwen3.5): MLX output only, config.json kept
 */
public record HfLayout(String architectureClass, boolean qkvBias, boolean qkNorm, boolean hybrid) {

    /**
     * Every weight a model of {@code config} may have, with its shapes: the list the loader checks, in load order
     * ({@link ModelWeights#expected} for a dense model, {@link HybridWeights#expected} for a hybrid).
     */
    public java.util.List<ExpectedWeight> weights(ModelConfig config) {
        return hybrid ? HybridWeights.expected(config) : ModelWeights.expected(config, new ModelWeights.Parts(qkvBias, qkNorm));
    }

    /** A dense transformer's layout: its layers hold {@code parts} beyond the Llama core. */
    static HfLayout dense(String architectureClass, ModelWeights.Parts parts) {
        return new HfLayout(architectureClass, parts.qkvBias(), parts.qkNorm(), false);
    }

    /** A hybrid's layout (its layer weights follow config.json's layer types). */
    static HfLayout hybrid(String architectureClass) {
        return new HfLayout(architectureClass, false, false, true);
    }
}
