package dev.forkpoint.model;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;

import java.util.List;
import java.util.Optional;
import java.util.function.IntConsumer;

/** A model's graph, described against the backend-neutral {@link Ops}. */
public interface Architecture {
    ModelConfig config();

    /**
     * One forward pass over several sequences: evaluates every segment's tokens at its positions, storing their keys
     * and values in its store, and returns the final hidden states of all segments' tokens, one after another. Each
     * row is exactly what a pass over its segment alone gives when the backend's ops are batch-invariant (the CPU
     * backend's are for up to 16 rows).
     */
    Activation forward(Ops ops, List<Segment> segments);

    /** The matrix that turns a hidden state into vocabulary logits. */
    Weight output();

    /** A named architecture: how its graph is built over a model's tensors. */
    interface Spec {
        /** The GGUF {@code general.architecture} name ("llama", "qwen2", "qwen3"), also Hugging Face's {@code model_type}. */
        String name();

        /**
         * Whether llama.cpp's GGUF files of this architecture rotate with the NeoX (half-split) RoPE layout; Hugging
         * Face layouts always do (llama.cpp permutes Llama's q/k rows for the adjacent-pair layout).
         */
        boolean ggufNeoxRope();

        /** Hugging Face's {@code model_type} of the architecture, when it differs from the GGUF name. */
        default String hfModelType() { return name(); }

        /**
         * The row order of the q and k projections (and their biases) in this architecture's GGUF files: GGUF row
         * {@code i} holds Hugging Face row {@code result[i]}; null when GGUF keeps Hugging Face's order (NeoX RoPE).
         * An architecture whose GGUF files rotate adjacent pairs ({@link #ggufNeoxRope()} false) gives its own
         * ({@link Llama}'s interleaved pairs).
         */
        default int[] ggufQkRowOrder(int heads, int headDim) {
            if (!ggufNeoxRope()) throw new IllegalStateException(name() + " rotates adjacent pairs in GGUF but gives no q/k row order");
            return null;
        }

        /** The architecture's tensor names, Hugging Face's and GGUF's ({@link TensorNames#DECODER} and its own parts). */
        TensorNames tensorNames();

        /**
         * Whether the architecture's layers mix Gated DeltaNet and gated attention: its configuration then reads the
         * linear-attention keys (GGUF {@code full_attention_interval}, {@code attention.recurrent_layers},
         * {@code ssm.*}; config.json {@code layer_types}, {@code linear_*}), the attention output gate
         * ({@code attn_output_gate}, default on) and partial rotary dims ({@code partial_rotary_factor}, default
         * 0.25). A converted hybrid says so in its {@link HfLayout#hybrid()} too.
         */
        default boolean hybrid() { return false; }

        /** How its config.json lays out a mixture of experts (read only where it names {@code num_experts}). */
        default ExpertKeys expertKeys() { return ExpertKeys.CONFIGURED; }

        /**
         * Whether llama.cpp's GGUF files of this hybrid with more value than key heads store the Gated DeltaNet value
         * heads tiled (head m·Hk + k for value m of key head k) rather than grouped, unless the file's
         * {@code ssm.v_head_reordered} is false.
         */
        default boolean ggufTiledValueHeads() { return false; }

        /** How the converter writes this architecture; empty for one it does not convert. */
        default Optional<HfLayout> hfLayout() { return Optional.empty(); }

        Architecture load(ModelConfig config, ModelTensors tensors, Backend backend, IntConsumer tensorLoaded);
    }
}
