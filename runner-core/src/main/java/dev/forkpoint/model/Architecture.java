package dev.forkpoint.model;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.gguf.GgufFile;

import java.util.List;
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

    /** How a named architecture is read from a GGUF file. */
    interface Spec {
        String name();

        Architecture load(GgufFile file, Backend backend, IntConsumer tensorLoaded);
    }
}
