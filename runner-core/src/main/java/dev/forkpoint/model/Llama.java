package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;

import java.util.Optional;
import java.util.function.IntConsumer;

/**
 * Llama 2/3, TinyLlama, SmolLM, the tinystories models: the plain {@link Transformer}. GGUF stores Llama's q/k
 * weights permuted for the normal (adjacent-pair) RoPE layout; Llama 3.1+ frequency scaling arrives as
 * {@code rope_freqs.weight}; without {@code output.weight} the embeddings are tied.
 */
record Llama() implements Architecture.Spec {
    private static final ModelWeights.Parts PARTS = new ModelWeights.Parts(false, false);

    public String name() { return "llama"; }

    public boolean ggufNeoxRope() { return false; }

    public TensorNames tensorNames() { return TensorNames.DECODER; }

    /**
     * The row order llama.cpp's converter gives Llama's q and k projections: within each head of {@code headDim}
     * rows, GGUF row 2k+j is Hugging Face row j·headDim/2 + k (rotary pairs interleaved instead of split in halves).
     */
    public int[] ggufQkRowOrder(int heads, int headDim) {
        int half = headDim / 2;
        int[] hfRow = new int[heads * headDim];
        for (int h = 0; h < heads; h++) {
            for (int k = 0; k < half; k++) {
                for (int j = 0; j < 2; j++) hfRow[h * headDim + 2 * k + j] = h * headDim + j * half + k;
            }
        }
        return hfRow;
    }

    public Optional<HfLayout> hfLayout() { return Optional.of(HfLayout.dense("LlamaForCausalLM", PARTS)); }

    public Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded) {
        return new Transformer(config, ModelWeights.load(tensors, backend, config, PARTS, tensorLoaded));
    }
}
