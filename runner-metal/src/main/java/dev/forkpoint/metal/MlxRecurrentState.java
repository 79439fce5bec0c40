package dev.forkpoint.metal;

import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.RecurrentSnapshot;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.metal.mlxc.MlxArray;
import dev.forkpoint.metal.mlxc.MlxSession;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One sequence's recurrent state on MLX, per linear layer: the convolution window (float32 [K−1, channels], oldest row
 * first) and the delta-rule matrix (float32 [valueHeads, keyDim, valueDim]). Every method runs on the backend's MLX
 * thread; the store ({@link MlxKvStore}) calls them there.
 *
 * <p>The same transaction as the CPU's state: the committed arrays are the state after exactly the store's committed
 * tokens, and a step never replaces them. An op reads a committed layer and hands its result to the open step
 * ({@link #setPendingConv}, {@link #setPendingState}: lazy MLX arrays, owned here from then on); {@link #checkCommit}
 * evaluates them (the one place a commit can fail, before anything changes) and refuses a step that wrote some layers
 * but not all; {@link #commit} swaps them in and frees the replaced ones; {@link #rollback} frees them. A committed
 * array is always evaluated, so it holds no graph. A layer never written is null: zeros, made when first read.
 *
 * <p>Lifetime: the arrays live as long as the sequence the store is over. The backend frees the state of a closed
 * sequence at the next step it begins on any store ({@link MlxBackend#sweepStates}), and every state when it closes.
 */
final class MlxRecurrentState {
    private final RecurrentLayout layout;
    private final SequenceKv sequence;
    private final MlxArray[] conv, state;
    private final MlxArray[] pendingConv, pendingState;
    private boolean open;
    private boolean pendingEvaluated = true;
    private boolean freed;

    MlxRecurrentState(RecurrentLayout layout, SequenceKv sequence) {
        this.layout = layout;
        this.sequence = sequence;
        int n = layout.layers();
        conv = new MlxArray[n];
        state = new MlxArray[n];
        pendingConv = new MlxArray[n];
        pendingState = new MlxArray[n];
    }

    RecurrentLayout layout() { return layout; }

    SequenceKv sequence() { return sequence; }

    /** The committed convolution window of {@code layer}, [K−1, channels] (owned here: never closed by the caller). */
    MlxArray conv(MlxSession s, int layer) {
        check(layer);
        if (conv[layer] == null) conv[layer] = s.zeros(layout.convKernel() - 1, layout.convChannels());
        return conv[layer];
    }

    /** The committed delta-rule matrix of {@code layer}, [valueHeads, keyDim, valueDim] (owned here). */
    MlxArray state(MlxSession s, int layer) {
        check(layer);
        if (state[layer] == null) state[layer] = s.zeros(layout.valueHeads(), layout.keyDim(), layout.valueDim());
        return state[layer];
    }

    /** Hands the open step's new window of {@code layer} to this state (which frees it from then on). */
    void setPendingConv(int layer, MlxArray window) {
        requireOpen(layer);
        if (pendingConv[layer] != null) pendingConv[layer].close();
        pendingConv[layer] = window;
        pendingEvaluated = false;
    }

    /** Hands the open step's new delta-rule matrix of {@code layer} to this state. */
    void setPendingState(int layer, MlxArray matrix) {
        requireOpen(layer);
        if (pendingState[layer] != null) pendingState[layer].close();
        pendingState[layer] = matrix;
        pendingEvaluated = false;
    }

    /** The open step's arrays not yet evaluated (to evaluate with a pass's logits), then taken as evaluated. */
    List<MlxArray> unevaluated() {
        List<MlxArray> out = new ArrayList<>();
        if (pendingEvaluated) return out;
        for (MlxArray a : pendingConv) if (a != null) out.add(a);
        for (MlxArray a : pendingState) if (a != null) out.add(a);
        return out;
    }

    /** After the arrays of {@link #unevaluated} were evaluated. */
    void markEvaluated() { pendingEvaluated = true; }

    void begin() {
        if (freed) throw new IllegalStateException("recurrent state of sequence " + sequence.id() + " was freed");
        if (open) throw new IllegalStateException("recurrent state: a step is already open");
        open = true;
    }

    /**
     * Refuses (changing nothing) a step that wrote some linear layers but not all; evaluates what the step wrote, so
     * that an MLX failure surfaces here, before anything is committed.
     */
    void checkCommit(MlxSession s) {
        int written = 0;
        for (int l = 0; l < layout.layers(); l++) if (pendingConv[l] != null || pendingState[l] != null) written++;
        if (written != 0 && written != layout.layers()) {
            throw new IllegalStateException("recurrent state: the step wrote " + written + " of " + layout.layers() + " linear layers");
        }
        List<MlxArray> todo = unevaluated();
        if (!todo.isEmpty()) {
            s.eval(todo.toArray(MlxArray[]::new));
            pendingEvaluated = true;
        }
    }

    /** Swaps in what the step wrote (each part of a layer separately) and frees what it replaced. */
    void commit(MlxSession s) {
        checkCommit(s);
        for (int l = 0; l < layout.layers(); l++) {
            if (pendingConv[l] != null) {
                if (conv[l] != null) conv[l].close();
                conv[l] = pendingConv[l];
                pendingConv[l] = null;
            }
            if (pendingState[l] != null) {
                if (state[l] != null) state[l].close();
                state[l] = pendingState[l];
                pendingState[l] = null;
            }
        }
        open = false;
    }

    /** Frees what the open step wrote; the committed state is untouched. */
    void rollback() {
        try {
            freeAll(pendingConv);
            freeAll(pendingState);
        } finally {
            pendingEvaluated = true;
            open = false;
        }
    }

    /** A host copy of the committed state (immutable), the state after exactly the committed tokens. */
    RecurrentSnapshot snapshot(MlxSession s) {
        if (open) throw new IllegalStateException("recurrent state: snapshot during an open step");
        int n = layout.layers();
        float[][] c = new float[n][], st = new float[n][];
        for (int l = 0; l < n; l++) {
            c[l] = conv[l] == null ? new float[layout.convFloats()] : host(s, conv[l], layout.convFloats());
            st[l] = state[l] == null ? new float[Math.toIntExact(layout.stateFloats())]
                    : host(s, state[l], Math.toIntExact(layout.stateFloats()));
        }
        return new Snapshot(layout, c, st);
    }

    /** Replaces the committed state by copies of the snapshot's arrays (uploaded first: a failure changes nothing). */
    void restore(MlxSession s, RecurrentSnapshot snapshot) {
        if (open) throw new IllegalStateException("recurrent state: restore during an open step");
        if (!(snapshot instanceof Snapshot snap) || !snap.layout().equals(layout)) {
            throw new IllegalArgumentException("recurrent state: snapshot of " + snapshot.layout() + " cannot restore " + layout);
        }
        int n = layout.layers();
        MlxArray[] c = new MlxArray[n], st = new MlxArray[n];
        try {
            for (int l = 0; l < n; l++) {
                c[l] = s.fromFloats(snap.conv()[l], layout.convKernel() - 1, layout.convChannels());
                st[l] = s.fromFloats(snap.state()[l], layout.valueHeads(), layout.keyDim(), layout.valueDim());
            }
        } catch (RuntimeException | Error e) {
            freeAll(c);
            freeAll(st);
            throw e;
        }
        freeAll(conv);
        freeAll(state);
        System.arraycopy(c, 0, conv, 0, n);
        System.arraycopy(st, 0, state, 0, n);
    }

    /** Frees every array (the sequence is gone, or the backend closes); the state cannot be used again. */
    void free() {
        freed = true;
        try {
            freeAll(pendingConv);
            freeAll(pendingState);
        } finally {
            freeAll(conv);
            freeAll(state);
        }
    }

    boolean freed() { return freed; }

    private static float[] host(MlxSession s, MlxArray a, int expected) {
        float[] v;
        try (MlxArray c = s.contiguous(a)) {
            v = s.toFloats(c);
        }
        if (v.length != expected) throw new IllegalStateException("recurrent state of " + v.length + " floats, expected " + expected);
        return v;
    }

    private static void freeAll(MlxArray[] arrays) {
        RuntimeException first = null;
        for (int i = 0; i < arrays.length; i++) {
            if (arrays[i] == null) continue;
            try {
                arrays[i].close();
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
            arrays[i] = null;
        }
        if (first != null) throw first;
    }

    private void requireOpen(int layer) {
        check(layer);
        if (!open) throw new IllegalStateException("recurrent state: layer " + layer + " written outside a step");
    }

    private int check(int layer) {
        if (freed) throw new IllegalStateException("recurrent state of sequence " + sequence.id() + " was freed");
        if (layer < 0 || layer >= conv.length) throw new IndexOutOfBoundsException("linear layer " + layer + " outside [0, " + conv.length + ")");
        return layer;
    }

    /** Host copies, never modified: the snapshot is immutable (and charged to the heap, as the CPU's are). */
    record Snapshot(RecurrentLayout layout, float[][] conv, float[][] state) implements RecurrentSnapshot {
        public long byteSize() { return layout.bytesPerSequence(); }

        @Override
        public String toString() {
            return "MLX recurrent snapshot " + layout + " (" + Arrays.stream(conv).mapToInt(a -> a.length).sum() + " conv floats)";
        }
    }
}
