package dev.forkpoint.backend;

import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.tensor.WeightSource;

import java.util.function.Supplier;

/** A compute backend: it holds weights, creates KV stores over kv-cache sequences and implements the ops. */
public interface Backend extends AutoCloseable {
    /**
     * Decode rows one pass carries at most: the engine's scheduler splits its decode tokens into passes of this many,
     * and a backend guarantees each such pass gives every row exactly the results of a one-row pass (the CPU backend's
     * Java decode kernels take up to this many tokens in a one-token multiply's arithmetic order). The one definition
     * of the number: the scheduler and the CPU kernels both read it here.
     */
    int MAX_DECODE_ROWS = 16;

    /** A short name for logs ("cpu", "mlx"). */
    String name();

    /** The kernels this backend computes with, for reports ("java", "native avx512vnni", …); "-" when it has no choice of them. */
    default String kernelsInUse() {
        return "-";
    }

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

    /**
     * Refuses, before any weight is prepared, a KV element type this backend's attention cannot read, with an
     * {@link dev.forkpoint.InvalidInputException} naming the type. The CPU backend reads every {@link KvElementType}.
     */
    default void checkKvType(KvElementType type) {}

    /**
     * Runs one engine step — the stores' begin, the forward pass, the logits, prepareCommit and commit, or the rollback
     * — where this backend runs its ops, and returns its result or rethrows its failure (unchecked exceptions and errors
     * as thrown). A backend whose ops must run on a thread of its own (MLX) runs the whole step there, one hand-off
     * instead of one per op; the default, the CPU backend's, runs it on the calling thread.
     */
    default <T> T runStep(Supplier<T> step) {
        return step.get();
    }

    /**
     * Token rows one pass may hold, from any number of sequences, with each row's results exactly what they would be
     * in a pass of its own: the scheduler mixes a prefill chunk into the decode pass only within this bound, so a
     * sequence's tokens never depend on its neighbours. The default, 1, never mixes.
     */
    default int invariantRows() {
        return 1;
    }

    @Override
    void close();
}
