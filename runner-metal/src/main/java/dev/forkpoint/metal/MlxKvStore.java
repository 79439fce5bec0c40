package dev.forkpoint.metal;

import dev.forkpoint.backend.KvStore;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.kvcache.SequenceKv;

import java.lang.foreign.MemorySegment;

/**
 * A {@link KvStore} of the MLX backend over one kv-cache {@link SequenceKv}, for this first version in the pages the
 * engine manages (host memory): steps map to the sequence's begin/commit/rollback; the attention op writes the step's
 * entries through the sequence (every position bounds-checked there) and copies positions [0, stored) of the pages into
 * MLX arrays. No recurrent state (the hybrids are refused at load). A step's begin and rollback end the backend's
 * current forward pass (its activations are freed), as reading its logits does.
 */
final class MlxKvStore implements KvStore {
    private final SequenceKv sequence;
    private final MlxBackend backend;

    MlxKvStore(SequenceKv sequence, MlxBackend backend) {
        if (sequence == null) throw new IllegalArgumentException("kv store: sequence is missing");
        this.sequence = sequence;
        this.backend = backend;
    }

    SequenceKv sequence() { return sequence; }

    public int layers() { return sequence.layout().layers(); }
    public int kvDim() { return sequence.layout().kvDim(); }
    public int length() { return sequence.length(); }
    public int pending() { return sequence.pending(); }
    /** Opens a step; a step starts a forward pass, so the previous pass's activations are freed first. */
    public void begin(int n) {
        backend.releaseActivations();
        sequence.begin(n);
    }

    public void commit() { sequence.commit(); }

    /** Drops the step's positions and frees the failed pass's activations. */
    public void rollback() {
        try {
            sequence.rollback();
        } finally {
            backend.releaseActivations();
        }
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
