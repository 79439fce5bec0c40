package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.RecurrentSnapshot;

/**
 * One sequence's recurrent state on the CPU, per linear layer: the convolution window ((K−1) × channels floats, oldest
 * row first) and the delta-rule matrix (valueHeads × keyDim × valueDim floats, head-major, S[h][i][j] for key dim i and
 * value dim j), all zeros at first.
 *
 * <p>Invariant: the committed arrays are the state after exactly the store's committed tokens. A step never writes
 * them: an op reads the committed layer and writes that layer's pending arrays ({@link #pendingConv},
 * {@link #pendingState}); commit swaps the pending arrays in, rollback forgets them. So a failed step leaves the
 * committed state untouched without copying it, and a step writes every layer or none.
 */
final class CpuRecurrentState {
    private final RecurrentLayout layout;
    private final float[][] conv, state;
    private final float[][] pendingConv, pendingState;
    private final boolean[] written, convWritten, stateWritten;
    private int writtenLayers;
    private boolean open;

    CpuRecurrentState(RecurrentLayout layout) {
        this.layout = layout;
        int n = layout.layers();
        conv = new float[n][];
        state = new float[n][];
        pendingConv = new float[n][];
        pendingState = new float[n][];
        written = new boolean[n];
        convWritten = new boolean[n];
        stateWritten = new boolean[n];
        for (int l = 0; l < n; l++) {
            conv[l] = new float[layout.convFloats()];
            state[l] = new float[Math.toIntExact(layout.stateFloats())];
        }
    }

    RecurrentLayout layout() { return layout; }

    /** The committed convolution window of {@code layer} (read-only for ops). */
    float[] conv(int layer) { return conv[check(layer)]; }

    /** The committed delta-rule matrix of {@code layer} (read-only for ops). */
    float[] state(int layer) { return state[check(layer)]; }

    /** The open step's convolution window of {@code layer}, to be written in full. */
    float[] pendingConv(int layer) {
        requireOpen(layer);
        markWritten(layer);
        convWritten[layer] = true;
        if (pendingConv[layer] == null) pendingConv[layer] = new float[conv[layer].length];
        return pendingConv[layer];
    }

    /** The open step's delta-rule matrix of {@code layer}, to be written in full. */
    float[] pendingState(int layer) {
        requireOpen(layer);
        markWritten(layer);
        stateWritten[layer] = true;
        if (pendingState[layer] == null) pendingState[layer] = new float[state[layer].length];
        return pendingState[layer];
    }

    void begin() {
        if (open) throw new IllegalStateException("recurrent state: a step is already open");
        open = true;
    }

    /** Refuses (changing nothing) a commit of a step that wrote some layers but not all. */
    void checkCommit() {
        if (writtenLayers != 0 && writtenLayers != layout.layers()) {
            throw new IllegalStateException("recurrent state: the step wrote " + writtenLayers + " of " + layout.layers() + " linear layers");
        }
    }

    void commit() {
        checkCommit();
        for (int l = 0; l < written.length; l++) {
            if (!written[l]) continue;
            // swap in only what the step wrote (the other part of the layer is unchanged): a pending array not written
            // this step holds an older state
            if (convWritten[l]) {
                float[] c = conv[l];
                conv[l] = pendingConv[l];
                pendingConv[l] = c;
            }
            if (stateWritten[l]) {
                float[] s = state[l];
                state[l] = pendingState[l];
                pendingState[l] = s;
            }
        }
        close();
    }

    void rollback() { close(); }

    private void close() {
        java.util.Arrays.fill(written, false);
        java.util.Arrays.fill(convWritten, false);
        java.util.Arrays.fill(stateWritten, false);
        writtenLayers = 0;
        open = false;
    }

    RecurrentSnapshot snapshot() {
        if (open) throw new IllegalStateException("recurrent state: snapshot during an open step");
        float[][] c = new float[conv.length][], s = new float[state.length][];
        for (int l = 0; l < c.length; l++) {
            c[l] = conv[l].clone();
            s[l] = state[l].clone();
        }
        return new Snapshot(layout, c, s);
    }

    void restore(RecurrentSnapshot snapshot) {
        if (open) throw new IllegalStateException("recurrent state: restore during an open step");
        if (!(snapshot instanceof Snapshot s) || !s.layout.equals(layout)) {
            throw new IllegalArgumentException("recurrent state: snapshot of " + snapshot.layout() + " cannot restore " + layout);
        }
        for (int l = 0; l < conv.length; l++) {
            System.arraycopy(s.conv[l], 0, conv[l], 0, conv[l].length);
            System.arraycopy(s.state[l], 0, state[l], 0, state[l].length);
        }
    }

    private void requireOpen(int layer) {
        check(layer);
        if (!open) throw new IllegalStateException("recurrent state: layer " + layer + " written outside a step");
    }

    private void markWritten(int layer) {
        if (!written[layer]) {
            written[layer] = true;
            writtenLayers++;
        }
    }

    private int check(int layer) {
        if (layer < 0 || layer >= conv.length) throw new IndexOutOfBoundsException("linear layer " + layer + " outside [0, " + conv.length + ")");
        return layer;
    }

    /** The arrays are copies, never modified: the snapshot is immutable. */
    private record Snapshot(RecurrentLayout layout, float[][] conv, float[][] state) implements RecurrentSnapshot {
        public long byteSize() { return layout.bytesPerSequence(); }
    }
}
