package dev.forkpoint.metal;

import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.RecurrentSnapshot;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.SequenceKv;

/**
 * A {@link KvStore} of the MLX backend over one kv-cache {@link SequenceKv}: steps map to the sequence's
 * begin/commit/rollback, which keep the page table, the length and every bounds check; the keys and values attention
 * reads live as MLX arrays beside the pages ({@link MlxKvArrays}), and the pages — what the prefix cache shares — get
 * each step's entries before it commits. A hybrid model's store also keeps the recurrent state as MLX arrays
 * ({@link MlxRecurrentState}), in the same step. prepareCommit evaluates what the step wrote when its logits were not
 * read, writes the pages and checks the recurrent state (a failure there changes nothing committed); commit swaps the
 * state in and extends the arrays' valid positions; rollback frees the step's arrays (the KV arrays are rebuilt from
 * the restored pages at the next step). A step's begin and rollback end the backend's current forward pass (its
 * activations are freed), as reading its logits does. The calls hop to the MLX thread unless already on it (a step
 * run through {@link MlxBackend#runStep}).
 */
final class MlxKvStore implements KvStore {
    private final SequenceKv sequence;
    private final MlxBackend backend;
    private final MlxKvArrays arrays;
    private final MlxRecurrentState recurrent;   // null for attention-only models

    MlxKvStore(SequenceKv sequence, MlxBackend backend, MlxKvArrays arrays, MlxRecurrentState recurrent) {
        if (sequence == null) throw new IllegalArgumentException("kv store: sequence is missing");
        this.sequence = sequence;
        this.backend = backend;
        this.arrays = arrays;
        this.recurrent = recurrent;
    }

    SequenceKv sequence() { return sequence; }

    public int layers() { return sequence.layout().layers(); }
    public int kvDim() { return sequence.layout().kvDim(); }
    public int length() { return sequence.length(); }
    public int pending() { return sequence.pending(); }

    /**
     * Opens a step; a step starts a forward pass, so the previous pass's activations are freed first (and the
     * arrays of sequences closed since).
     */
    public void begin(int n) {
        backend.releaseActivations();
        sequence.begin(n);
        try {
            backend.call(() -> {
                arrays.begin();
                if (recurrent != null) recurrent.begin();
                return null;
            });
        } catch (RuntimeException | Error e) {
            sequence.rollback();
            throw e;
        }
    }

    public void prepareCommit() {
        backend.call(() -> {
            if (recurrent != null) recurrent.checkCommit(backend.session());
            arrays.writePages(backend.session());
            return null;
        });
    }

    public void commit() {
        prepareCommit();   // evaluates and writes the step: anything that can fail, before anything changes
        sequence.commit();
        backend.call(() -> {
            arrays.commit();
            if (recurrent != null) recurrent.commit(backend.session());
            return null;
        });
    }

    /** Drops the step's positions and state, and frees the failed pass's activations. */
    public void rollback() {
        try {
            sequence.rollback();
        } finally {
            try {
                backend.call(() -> {
                    try {
                        arrays.rollback();
                    } finally {
                        if (recurrent != null) recurrent.rollback();
                    }
                    return null;
                });
            } finally {
                backend.releaseActivations();
            }
        }
    }

    public RecurrentLayout recurrentLayout() { return recurrent == null ? null : recurrent.layout(); }

    public RecurrentSnapshot snapshot() {
        if (recurrent == null) return KvStore.super.snapshot();
        return backend.call(() -> recurrent.snapshot(backend.session()));
    }

    public void restore(RecurrentSnapshot snapshot) {
        if (recurrent == null) {
            KvStore.super.restore(snapshot);
            return;
        }
        backend.call(() -> {
            recurrent.restore(backend.session(), snapshot);
            return null;
        });
    }

    /** The recurrent state, for the linear-attention ops (on the MLX thread); refused when the store keeps none. */
    MlxRecurrentState recurrent() {
        if (recurrent == null) throw new IllegalStateException("kv store of sequence " + sequence.id() + " keeps no recurrent state");
        return recurrent;
    }

    KvElementType elementType() { return sequence.layout().elementType(); }

    /** The keys and values as MLX arrays, for the attention op (on the MLX thread). */
    MlxKvArrays arrays() { return arrays; }
}
