package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Weight;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A model's tensors by their llama.cpp GGUF names ({@code blk.0.attn_q.weight}), whatever the format holds them:
 * a GGUF file, or a Hugging Face / MLX folder whose names and quantisation are translated. Shapes are in GGML order
 * (elements per row first).
 */
public interface ModelTensors {
    /** What the tensors come from, for error messages. */
    Path path();

    /** The shape of the tensor named {@code name} (GGML order), or empty when the model has none by that name. */
    Optional<long[]> shape(String name);

    /** Prepares the tensor on the backend; throws {@link dev.forkpoint.format.ModelFormatException} when it is missing. */
    Weight weight(String name, Backend backend);

    /**
     * The values of a small plain tensor (F32, F16, BF16, or a GGML block type in GGUF) as floats, in storage order,
     * for weights an architecture adjusts at load (zero-centred norm weights, a convolution kernel); a quantised or
     * missing tensor is refused naming it.
     */
    float[] floats(String name);

    /** How many tensors the model holds (for progress). */
    int count();

    /**
     * The first float tensor (F32, F16, BF16) holding a NaN or an infinity, described with the element's index
     * ("token_embd.weight: element 17"), or empty when there is none or the format is not scanned. Reads every float
     * tensor: for explaining a failure, not for loading.
     */
    default java.util.Optional<String> firstNonFinite() { return java.util.Optional.empty(); }
}
