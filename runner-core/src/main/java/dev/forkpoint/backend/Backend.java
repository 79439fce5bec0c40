package dev.forkpoint.backend;

import dev.forkpoint.format.gguf.GgufTensor;

/** A compute backend: it holds weights, creates KV stores and implements the ops. */
public interface Backend extends AutoCloseable {
    /** A short name for logs ("cpu", "mlx"). */
    String name();

    /** Prepares a GGUF tensor as a weight. Refuses types it cannot compute with, naming the tensor and listing the supported types. */
    Weight weight(GgufTensor tensor);

    KvStore newKvStore(int layers, int kvDim, int capacity);

    Ops ops();

    @Override
    void close();
}
