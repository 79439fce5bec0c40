package dev.forkpoint.metal;

import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.metal.mlxc.MlxArray;
import dev.forkpoint.metal.mlxc.MlxC;
import dev.forkpoint.metal.mlxc.MlxSession;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * One sequence's keys and values of every attention layer as MLX arrays, beside the kv-cache pages: attention reads
 * these (no copy of the pages per layer, no evaluation per layer); the pages stay what the prefix cache shares between
 * sequences, written once per step from the step's evaluated entries.
 *
 * <h2>Invariants</h2>
 * <ol>
 * <li>Per layer, keys and values are both null or both float32 [1, kvHeads, capacity, headDim]; capacity is a
 *     multiple of {@value #CHUNK} positions, grown by whole chunks (the kept positions copied once per growth).</li>
 * <li>Positions [0, valid[layer]) of a layer equal the sequence's pages there, as floats (an F16 pool's entries are
 *     rounded to half precision here too). Outside a step valid[layer] ≤ the sequence's committed length (a truncated
 *     sequence lowers it at the next {@link #begin}). Positions at or past valid are garbage and never read.</li>
 * <li>Only the open step writes, and only its positions [length, length + pending), checked against the sequence: a
 *     layer that lacks positions before the step's start is first rebuilt from the pages (a new store over a sequence
 *     matched in the prefix cache, a fork, a store after a rollback). {@link #writePages} writes the step's entries
 *     through {@link SequenceKv#write} (which checks every position) before the sequence commits; {@link #commit}
 *     extends valid over them. {@link #rollback} frees every array (valid 0), so the next step rebuilds from the pages,
 *     which the sequence has put back exactly: a failed step leaves length and contents as they were.</li>
 * <li>A step's updated arrays and its entries for the pages are computed with the pass's logits
 *     ({@link #unevaluated}), or by {@link #writePages} when no logits were read: one evaluation per pass.</li>
 * <li>A layer is written at most once per step.</li>
 * </ol>
 * MLX thread only.
 */
final class MlxKvArrays {
    /** Positions the arrays grow by. */
    static final int CHUNK = 256;

    /** Keys and values of positions [0, stored) of one layer: float32 [1, kvHeads, stored, headDim] views. */
    record Views(MlxArray keys, MlxArray values) implements AutoCloseable {
        public void close() {
            try {
                keys.close();
            } finally {
                values.close();
            }
        }
    }

    private final SequenceKv sequence;
    private final int layers;
    private final int kvDim;
    private final MlxArray[] keys, values;
    private final int[] capacity, valid;
    private final MlxArray[] stepKeys, stepValues;   // the open step's rounded entries, [n, kvDim], for the pages
    private int kvHeads = -1, headDim = -1;          // fixed by the first write
    private int stepStart = -1, stepLength;          // the open step, or -1
    private boolean pagesWritten;

    MlxKvArrays(SequenceKv sequence) {
        this.sequence = sequence;
        this.layers = sequence.layout().layers();
        this.kvDim = sequence.layout().kvDim();
        keys = new MlxArray[layers];
        values = new MlxArray[layers];
        capacity = new int[layers];
        valid = new int[layers];
        stepKeys = new MlxArray[layers];
        stepValues = new MlxArray[layers];
    }

    SequenceKv sequence() { return sequence; }

    /** After the sequence opened a step: no layer counts positions past the committed length as valid. */
    void begin() {
        freeStep();
        int length = sequence.length();
        for (int l = 0; l < layers; l++) valid[l] = Math.min(valid[l], length);
        stepStart = length;
        stepLength = sequence.pending();
        pagesWritten = false;
    }

    /**
     * Writes rows [row, row + n) of the pass's k and v ([T, kvDim] float32) as the open step's positions of
     * {@code layer}, and returns views of the layer's positions [0, start + n) (the caller closes them).
     */
    Views append(MlxSession s, int layer, MlxArray k, MlxArray v, int row, int n, int kvHeads, int headDim) {
        if (layer < 0 || layer >= layers) throw new IndexOutOfBoundsException("layer " + layer + " outside [0, " + layers + ")");
        if (stepStart < 0 || !sequence.inStep() || stepStart != sequence.length() || stepLength != sequence.pending()) {
            throw new IllegalStateException("sequence " + sequence.id() + ": the MLX keys and values are written only inside the step they were begun with");
        }
        if (n != stepLength) throw new IllegalStateException("sequence " + sequence.id() + ": " + n + " rows for a step of " + stepLength + " positions");
        if (stepKeys[layer] != null) throw new IllegalStateException("sequence " + sequence.id() + ": layer " + layer + " written twice in one step");
        if (kvHeads * headDim != kvDim) throw new IllegalArgumentException(kvHeads + " heads of " + headDim + " for entries of " + kvDim);
        if (this.kvHeads < 0) {
            this.kvHeads = kvHeads;
            this.headDim = headDim;
        } else if (this.kvHeads != kvHeads || this.headDim != headDim) {
            throw new IllegalArgumentException("the keys are kept as " + this.kvHeads + " heads of " + this.headDim + ", not " + kvHeads + " of " + headDim);
        }
        int start = stepStart, stored = start + n;
        List<MlxArray> temps = new ArrayList<>();
        MlxArray kStep = null, vStep = null;
        try {
            kStep = rounded(s, temps, k, row, n);
            vStep = rounded(s, temps, v, row, n);
            MlxArray k4 = temp(temps, s.transpose(temp(temps, s.reshape(kStep, 1, n, kvHeads, headDim)), 0, 2, 1, 3));
            MlxArray v4 = temp(temps, s.transpose(temp(temps, s.reshape(vStep, 1, n, kvHeads, headDim)), 0, 2, 1, 3));
            if (keys[layer] == null || valid[layer] < start) rebuild(s, layer, start, stored);
            else if (capacity[layer] < stored) grow(s, layer, stored);
            int[] from = {0, 0, start, 0}, to = {1, kvHeads, stored, headDim};
            MlxArray newKeys = s.sliceUpdate(keys[layer], k4, from, to);
            MlxArray newValues;
            try {
                newValues = s.sliceUpdate(values[layer], v4, from, to);
            } catch (RuntimeException | Error e) {
                newKeys.close();
                throw e;
            }
            replace(layer, newKeys, newValues);   // the old arrays only feed the update now: MLX may write in place
            stepKeys[layer] = kStep;
            stepValues[layer] = vStep;
            kStep = vStep = null;
            return views(s, layer, stored);
        } finally {
            for (MlxArray t : temps) t.close();
            if (kStep != null) kStep.close();
            if (vStep != null) vStep.close();
        }
    }

    /** Rows [row, row + n) of a, rounded as the pool stores them, contiguous (owned by the caller). */
    private MlxArray rounded(MlxSession s, List<MlxArray> temps, MlxArray a, int row, int n) {
        MlxArray rows = temp(temps, s.slice(a, new int[] {row, 0}, new int[] {row + n, kvDim}));
        if (sequence.layout().elementType() == KvElementType.F16) {
            rows = temp(temps, s.astype(temp(temps, s.astype(rows, MlxC.MLX_FLOAT16)), MlxC.MLX_FLOAT32));
        }
        return s.contiguous(rows);
    }

    private Views views(MlxSession s, int layer, int stored) {
        int[] from = {0, 0, 0, 0}, to = {1, kvHeads, stored, headDim};
        MlxArray k = s.slice(keys[layer], from, to);
        try {
            return new Views(k, s.slice(values[layer], from, to));
        } catch (RuntimeException | Error e) {
            k.close();
            throw e;
        }
    }

    /** The layer's positions [0, start) from the pages, in arrays of capacity for {@code needed} positions. */
    private void rebuild(MlxSession s, int layer, int start, int needed) {
        int cap = chunks(needed);
        List<MlxArray> temps = new ArrayList<>();
        MlxArray k = null, v = null;
        try {
            if (start == 0) {
                k = s.zeros(1, kvHeads, cap, headDim);
                v = s.zeros(1, kvHeads, cap, headDim);
            } else {
                k = fromPages(s, temps, layer, KvKind.KEY, start, cap);
                v = fromPages(s, temps, layer, KvKind.VALUE, start, cap);
            }
            replace(layer, k, v);
            k = v = null;
            capacity[layer] = cap;
            valid[layer] = start;
        } finally {
            for (MlxArray t : temps) t.close();
            if (k != null) k.close();
            if (v != null) v.close();
        }
    }

    private MlxArray fromPages(MlxSession s, List<MlxArray> temps, int layer, KvKind kind, int positions, int cap) {
        boolean f16 = sequence.layout().elementType() == KvElementType.F16;
        long rowBytes = sequence.layout().rowBytes();
        MlxArray rows;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(positions * rowBytes, 4);
            int pageTokens = sequence.layout().pageTokens();
            for (int page = 0, p = 0; p < positions; page++) {
                int count = Math.min(pageTokens, positions - p);
                MemorySegment.copy(sequence.pageSlab(page, layer, kind), 0, dst, p * rowBytes, count * rowBytes);
                p += count;
            }
            rows = temp(temps, s.fromData(dst, f16 ? MlxC.MLX_FLOAT16 : MlxC.MLX_FLOAT32, 1, positions, kvHeads, headDim));
        }
        if (f16) rows = temp(temps, s.astype(rows, MlxC.MLX_FLOAT32));
        MlxArray heads = temp(temps, s.transpose(rows, 0, 2, 1, 3));
        if (cap == positions) return s.contiguous(heads);
        return s.concatenate(2, heads, temp(temps, s.zeros(1, kvHeads, cap - positions, headDim)));
    }

    /** Room for {@code needed} positions, the valid ones kept. */
    private void grow(MlxSession s, int layer, int needed) {
        int cap = chunks(needed), keep = valid[layer];
        List<MlxArray> temps = new ArrayList<>();
        MlxArray k = null, v = null;
        try {
            MlxArray room = temp(temps, s.zeros(1, kvHeads, cap - keep, headDim));
            int[] from = {0, 0, 0, 0}, to = {1, kvHeads, keep, headDim};
            k = s.concatenate(2, temp(temps, s.slice(keys[layer], from, to)), room);
            v = s.concatenate(2, temp(temps, s.slice(values[layer], from, to)), room);
            replace(layer, k, v);
            k = v = null;
            capacity[layer] = cap;
        } finally {
            for (MlxArray t : temps) t.close();
            if (k != null) k.close();
            if (v != null) v.close();
        }
    }

    private static int chunks(int positions) {
        return Math.max(1, (positions + CHUNK - 1) / CHUNK) * CHUNK;
    }

    private void replace(int layer, MlxArray k, MlxArray v) {
        MlxArray oldK = keys[layer], oldV = values[layer];
        keys[layer] = k;
        values[layer] = v;
        try {
            if (oldK != null) oldK.close();
        } finally {
            if (oldV != null) oldV.close();
        }
    }

    private static MlxArray temp(List<MlxArray> temps, MlxArray a) {
        temps.add(a);
        return a;
    }

    /** The open step's arrays still to compute: the layers' updated keys and values and the entries for the pages. */
    List<MlxArray> unevaluated() {
        List<MlxArray> out = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            if (stepKeys[l] == null) continue;
            out.add(keys[l]);
            out.add(values[l]);
            out.add(stepKeys[l]);
            out.add(stepValues[l]);
        }
        return out;
    }

    /**
     * Evaluates what the step wrote (nothing more when its logits were read) and writes its entries into the pages
     * through the sequence, which refuses any position outside the open step. Once per step; changes nothing the
     * sequence has committed.
     */
    void writePages(MlxSession s) {
        if (pagesWritten || stepStart < 0) return;
        List<MlxArray> pending = unevaluated();
        if (!pending.isEmpty()) s.eval(pending.toArray(MlxArray[]::new));
        for (int l = 0; l < layers; l++) {
            if (stepKeys[l] == null) continue;
            float[] k = s.toFloats(stepKeys[l]), v = s.toFloats(stepValues[l]);
            for (int t = 0; t < stepLength; t++) {
                sequence.write(stepStart + t, l, KvKind.KEY, k, t * kvDim);
                sequence.write(stepStart + t, l, KvKind.VALUE, v, t * kvDim);
            }
        }
        pagesWritten = true;
    }

    /** After the sequence committed the step: its positions of the layers it wrote become valid. */
    void commit() {
        for (int l = 0; l < layers; l++) if (stepKeys[l] != null) valid[l] = stepStart + stepLength;
        freeStep();
        stepStart = -1;
    }

    /** After the sequence rolled the step back: every array is freed; the next step rebuilds from the pages. */
    void rollback() {
        free();
    }

    /** Frees every array. */
    void free() {
        RuntimeException first = null;
        for (int l = 0; l < layers; l++) {
            for (MlxArray a : new MlxArray[] {keys[l], values[l], stepKeys[l], stepValues[l]}) {
                try {
                    if (a != null) a.close();
                } catch (RuntimeException e) {
                    if (first == null) first = e;
                }
            }
            keys[l] = values[l] = stepKeys[l] = stepValues[l] = null;
            capacity[l] = valid[l] = 0;
        }
        stepStart = -1;
        if (first != null) throw first;
    }

    private void freeStep() {
        for (int l = 0; l < layers; l++) {
            try {
                if (stepKeys[l] != null) stepKeys[l].close();
                if (stepValues[l] != null) stepValues[l].close();
            } finally {
                stepKeys[l] = stepValues[l] = null;
            }
        }
    }

    /** Positions of {@code layer} the arrays hold valid (for tests). */
    int valid(int layer) { return valid[layer]; }

    /** Positions the arrays of {@code layer} have room for (for tests). */
    int capacity(int layer) { return capacity[layer]; }

    /** Positions [0, positions) of (layer, kind) as [positions, kvDim] floats, or null when none are kept (for tests). */
    float[] read(MlxSession s, int layer, KvKind kind, int positions) {
        if (positions > valid[layer]) throw new IndexOutOfBoundsException(positions + " positions of layer " + layer + ", " + valid[layer] + " valid");
        MlxArray a = kind == KvKind.KEY ? keys[layer] : values[layer];
        if (a == null || positions == 0) return null;
        try (MlxArray part = s.slice(a, new int[] {0, 0, 0, 0}, new int[] {1, kvHeads, positions, headDim});
             MlxArray rows = s.transpose(part, 0, 2, 1, 3);
             MlxArray c = s.contiguous(rows);
             MlxArray flat = s.reshape(c, positions, kvDim)) {
            return s.toFloats(flat);
        }
    }
}
