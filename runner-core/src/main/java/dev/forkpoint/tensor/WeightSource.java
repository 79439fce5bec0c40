package dev.forkpoint.tensor;

/**
 * What a backend is given to prepare one weight, independent of the container it came from (GGUF, safetensors,
 * values computed at load): a GGML-typed tensor, an MLX affine- or floating-point-quantised matrix, or host floats.
 * Formats and model loaders build these; a backend switches over them and refuses what it cannot compute with,
 * naming the tensor.
 */
public sealed interface WeightSource permits GgmlTensor, AffineTensor, FpTensor, HostMatrix {
    /** The tensor's name (llama.cpp's GGUF names), for error messages. */
    String name();
}
