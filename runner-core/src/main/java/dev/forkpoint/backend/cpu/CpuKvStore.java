package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.RecurrentSnapshot;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.kvcache.SequenceKv;

import java.lang.foreign.MemorySegment;

/**
 * A {@link KvStore} over one kv-cache {@link SequenceKv}: steps map to the sequence's begin/commit/rollback, the
 * attention op writes the step's entries through the sequence (bounds-checked) and reads pages as off-heap slabs of
 * {@code pageTokens} rows of kvDim elements of the pool's element type, F32, F16, Q8_0 or Q4_0 (a step's rows are
 * rounded or quantised as they are written; layout: see {@code dev.forkpoint.kvcache.PagePool}).
 */
final class CpuKvStore implements KvStore {
    private final SequenceKv sequence;
    private final CpuRecurrentState recurrent;   // null for attention-only models

    CpuKvStore(SequenceKv sequence, RecurrentLayout layout) {
        if (sequence == null) throw new IllegalArgumentException("kv store: sequence is missing");
        this.sequence = sequence;
        this.recurrent = layout == null ? null : new CpuRecurrentState(layout);
    }

    SequenceKv sequence() { return sequence; }

    public int layers() { return sequence.layout().layers(); }
    public int kvDim() { return sequence.layout().kvDim(); }
    public int length() { return sequence.length(); }
    public int pending() { return sequence.pending(); }
    public void begin(int n) {
        sequence.begin(n);
        if (recurrent != null) recurrent.begin();
    }

    public void prepareCommit() {
        if (recurrent != null) recurrent.checkCommit();
    }

    public void commit() {
        if (recurrent != null) recurrent.checkCommit();   // before anything changes
        sequence.commit();
        if (recurrent != null) recurrent.commit();
    }

    public void rollback() {
        try {
            sequence.rollback();
        } finally {
            if (recurrent != null) recurrent.rollback();
        }
    }

    public RecurrentLayout recurrentLayout() { return recurrent == null ? null : recurrent.layout(); }

    public RecurrentSnapshot snapshot() {
        if (recurrent == null) return KvStore.super.snapshot();
        return recurrent.snapshot();
    }

    public void restore(RecurrentSnapshot snapshot) {
        if (recurrent == null) KvStore.super.restore(snapshot);
        else recurrent.restore(snapshot);
    }

    /** The recurrent state, for the linear-attention ops; refused when the store keeps none. */
    CpuRecurrentState recurrent() {
        if (recurrent == null) throw new IllegalStateException("kv store of sequence " + sequence.id() + " keeps no recurrent state");
        return recurrent;
    }

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
