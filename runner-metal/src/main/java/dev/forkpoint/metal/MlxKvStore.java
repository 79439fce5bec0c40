package dev.forkpoint.metal;

import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.RecurrentSnapshot;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.kvcache.SequenceKv;

import java.lang.foreign.MemorySegment;

/**
 * A {@link KvStore} of the MLX backend over one kv-cache {@link SequenceKv}, for this first version in the pages the
 * engine manages (host memory): steps map to the sequence's begin/commit/rollback; the attention op writes the step's
 * entries through the sequence (every position bounds-checked there) and copies positions [0, stored) of the pages into
 * MLX arrays. A hybrid model's store also keeps the recurrent state as MLX arrays ({@link MlxRecurrentState}), in the
 * same step: prepareCommit evaluates what the step wrote (a failure there changes nothing), commit swaps it in,
 * rollback frees it. A step's begin and rollback end the backend's current forward pass (its activations are freed),
 * as reading its logits does.
 */
final class MlxKvStore implements KvStore {
    private final SequenceKv sequence;
    private final MlxBackend backend;
    private final MlxRecurrentState recurrent;   // null for attention-only models

    MlxKvStore(SequenceKv sequence, MlxBackend backend, MlxRecurrentState recurrent) {
        if (sequence == null) throw new IllegalArgumentException("kv store: sequence is missing");
        this.sequence = sequence;
        this.backend = backend;
        this.recurrent = recurrent;
    }

    SequenceKv sequence() { return sequence; }

    public int layers() { return sequence.layout().layers(); }
    public int kvDim() { return sequence.layout().kvDim(); }
    public int length() { return sequence.length(); }
    public int pending() { return sequence.pending(); }

    /**
     * Opens a step; a step starts a forward pass, so the previous pass's activations are freed first (and the
     * recurrent state of sequences closed since).
     */
    public void begin(int n) {
        backend.releaseActivations();
        sequence.begin(n);
        if (recurrent != null) {
            try {
                backend.call(() -> {
                    recurrent.begin();
                    return null;
                });
            } catch (RuntimeException | Error e) {
                sequence.rollback();
                throw e;
            }
        }
    }

    public void prepareCommit() {
        if (recurrent != null) backend.call(() -> {
            recurrent.checkCommit(backend.session());
            return null;
        });
    }

    public void commit() {
        if (recurrent == null) {
            sequence.commit();
            return;
        }
        prepareCommit();   // evaluates the step's state: anything that can fail, before anything changes
        sequence.commit();
        backend.call(() -> {
            recurrent.commit(backend.session());
            return null;
        });
    }

    /** Drops the step's positions and state, and frees the failed pass's activations. */
    public void rollback() {
        try {
            sequence.rollback();
        } finally {
            try {
                if (recurrent != null) backend.call(() -> {
                    recurrent.rollback();
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

    /** Writes one position's key and value (kvDim floats each); only inside the open step (checked by the sequence). */
    void write(int layer, int position, float[] k, int kOff, float[] v, int vOff) {
        sequence.write(position, layer, KvKind.KEY, k, kOff);
        sequence.write(position, layer, KvKind.VALUE, v, vOff);
    }

    /**
     * Copies the (layer, kind) entries of positions [0, positions) into {@code dst}, one after another (kvDim elements
     * each, in the pool's element type and the platform's byte order). Positions past what the sequence stores are
     * refused.
     */
    void copy(int layer, KvKind kind, int positions, MemorySegment dst) {
        if (positions < 0 || positions > sequence.stored()) {
            throw new IndexOutOfBoundsException("sequence " + sequence.id() + ": reading " + positions
                    + " positions, " + sequence.stored() + " stored");
        }
        if (layer < 0 || layer >= layers()) throw new IndexOutOfBoundsException("layer " + layer + " outside [0, " + layers() + ")");
        int pageTokens = sequence.layout().pageTokens();
        long rowBytes = (long) kvDim() * elementType().bytes();
        if (dst.byteSize() != positions * rowBytes) {
            throw new IllegalArgumentException(positions + " positions need " + positions * rowBytes + " bytes, got " + dst.byteSize());
        }
        for (int page = 0, p = 0; p < positions; page++) {
            int count = Math.min(pageTokens, positions - p);
            MemorySegment.copy(sequence.pageSlab(page, layer, kind), 0, dst, p * rowBytes, count * rowBytes);
            p += count;
        }
    }
}
