package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.KvStore;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.kvcache.SequenceKv;

import java.lang.foreign.MemorySegment;

/**
 * A {@link KvStore} over one kv-cache {@link SequenceKv}: steps map to the sequence's begin/commit/rollback, the
 * attention op writes the step's entries through the sequence (bounds-checked) and reads pages as off-heap slabs of
 * {@code pageTokens × kvDim} elements (layout: see {@code dev.forkpoint.kvcache.PagePool}).
 */
final class CpuKvStore implements KvStore {
    private final SequenceKv sequence;

    CpuKvStore(SequenceKv sequence) {
        if (sequence == null) throw new IllegalArgumentException("kv store: sequence is missing");
        this.sequence = sequence;
    }

    SequenceKv sequence() { return sequence; }

    public int layers() { return sequence.layout().layers(); }
    public int kvDim() { return sequence.layout().kvDim(); }
    public int length() { return sequence.length(); }
    public int pending() { return sequence.pending(); }
    public void begin(int n) { sequence.begin(n); }
    public void commit() { sequence.commit(); }
    public void rollback() { sequence.rollback(); }

    int pageTokens() { return sequence.layout().pageTokens(); }

    KvElementType elementType() { return sequence.layout().elementType(); }

    /** Writes one position's key and value (kvDim floats each, from k[kOff…], v[vOff…]); only inside the open step. */
    void write(int layer, int position, float[] k, int kOff, float[] v, int vOff) {
        sequence.write(position, layer, KvKind.KEY, k, kOff);
        sequence.write(position, layer, KvKind.VALUE, v, vOff);
    }

    /** The slabs of table pages [0, pages) for (layer, kind). */
    MemorySegment[] slabs(int layer, KvKind kind, int pages) {
        MemorySegment[] out = new MemorySegment[pages];
        for (int i = 0; i < pages; i++) out[i] = sequence.pageSlab(i, layer, kind);
        return out;
    }
}
