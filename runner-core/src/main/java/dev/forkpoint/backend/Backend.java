package dev.forkpoint.backend;

import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.tensor.WeightSource;

/** A compute backend: it holds weights, creates KV stores over kv-cache sequences and implements the ops. */
public interface Backend extends AutoCloseable {
    /** A short name for logs ("cpu", "mlx"). */
    String name();

    /**
     * Prepares a weight from its description: a GGML-typed tensor ({@link dev.forkpoint.tensor.GgmlTensor}, read in
     * place), an MLX affine- or floating-point-quantised matrix ({@link dev.forkpoint.tensor.AffineTensor},
     * {@link dev.forkpoint.tensor.FpTensor}, read in place), or host values ({@link dev.forkpoint.tensor.HostMatrix},
     * copied: a rows × cols matrix, or a vector when rows is 1). Refuses what it cannot compute with, naming the tensor
     * and listing the supported types.
     */
    Weight weight(WeightSource source);

    /** A view of one kv-cache sequence (its pool's layout gives layers, kvDim and element type) for this backend's attention. */
    default KvStore newKvStore(SequenceKv sequence) {
        return newKvStore(sequence, null);
    }

    /**
     * A view of one kv-cache sequence that also keeps, when {@code recurrent} is not null, that layout's recurrent state
     * (zeros at first): steps begin, commit and roll back KV and state together.
     */
    KvStore newKvStore(SequenceKv sequence, RecurrentLayout recurrent);

    Ops ops();

    /**
     * Refuses, before any weight is prepared, an architecture (GGUF {@code general.architecture} name: "llama",
     * "qwen35moe", …) whose ops this backend does not implement, with an {@link dev.forkpoint.InvalidInputException}
     * saying what it runs. The CPU backend runs every architecture Forkpoint knows.
     */
    default void checkArchitecture(String architecture) {}

    @Override
    void close();
}
