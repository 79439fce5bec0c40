package dev.forkpoint.model;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.gguf.GgufFile;

import java.util.function.IntConsumer;

/** A model's graph, described against the backend-neutral {@link Ops}. */
public interface Architecture {
    ModelConfig config();

    /**
     * Evaluates {@code tokens} at positions startPos, startPos+1, …, storing their keys and values in {@code kv}, and
     * returns the final (output-normed) hidden state of every token.
     */
    Activation forward(Ops ops, int[] tokens, int startPos, KvStore kv);

    /** The matrix that turns a hidden state into vocabulary logits. */
    Weight output();

    /** How a named architecture is read from a GGUF file. */
    interface Spec {
        String name();

        Architecture load(GgufFile file, Backend backend, IntConsumer tensorLoaded);
    }
}
