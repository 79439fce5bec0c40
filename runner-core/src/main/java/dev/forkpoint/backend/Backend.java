package dev.forkpoint.backend;

import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpTensor;

/** A compute backend: it holds weights, creates KV stores over kv-cache sequences and implements the ops. */
public interface Backend extends AutoCloseable {
    /** A short name for logs ("cpu", "mlx"). */
    String name();

    /** Prepares a GGUF tensor as a weight. Refuses types it cannot compute with, naming the tensor and listing the supported types. */
    Weight weight(GgufTensor tensor);

    /**
     * Prepares an MLX affine-quantised matrix (codes, scales and biases as an mlx-community model stores them) as a
     * weight, read in place. Refuses formats it cannot compute with, naming the tensor.
     */
    Weight weight(AffineTensor tensor);

    /**
     * Prepares a matrix in one of MLX's floating-point quantisation formats (mxfp4, nvfp4, mxfp8: codes and scale bytes
     * as an MLX model stores them) as a weight, read in place. A backend without kernels for them refuses, naming the
     * tensor; this default does.
     */
    default Weight weight(FpTensor tensor) {
        throw new InvalidInputException("tensor " + tensor.name() + " is " + tensor.format().typeName()
                + "-quantised, which the " + name() + " backend does not support");
    }

    /** A view of one kv-cache sequence (its pool's layout gives layers, kvDim and element type) for this backend's attention. */
    default KvStore newKvStore(SequenceKv sequence) {
        return newKvStore(sequence, null);
    }

    /**
     * A view of one kv-cache sequence that also keeps, when {@code recurrent} is not null, that layout's recurrent state
     * (zeros at first): steps begin, commit and roll back KV and state together.
     */
    KvStore newKvStore(SequenceKv sequence, RecurrentLayout recurrent);

    /** A weight from host values: a rows × cols matrix, or a vector when rows is 1 (norm weights adjusted at load). */
    Weight weight(String name, float[] values, int rows, int cols);

    Ops ops();

    @Override
    void close();
}
