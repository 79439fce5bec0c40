package dev.forkpoint.backend;

/**
 * The fixed-size state one sequence keeps for each linear-attention (Gated DeltaNet) layer: the causal convolution's
 * window of K−1 input rows of {@code convChannels}, and the delta rule's matrix of valueHeads × keyDim × valueDim.
 * Unlike KV it cannot be truncated: to go back, a state captured at that offset is restored.
 *
 * @param layers linear layers (the state's layer index is the linear layer's index among them)
 */
public record RecurrentLayout(int layers, int convChannels, int convKernel, int valueHeads, int keyDim, int valueDim) {
    public RecurrentLayout {
        if (layers < 1 || convChannels < 1 || convKernel < 1 || valueHeads < 1 || keyDim < 1 || valueDim < 1) {
            throw new IllegalArgumentException("recurrent layout: every size must be positive: " + layers + " layers, "
                    + convChannels + " conv channels, kernel " + convKernel + ", " + valueHeads + " heads of " + keyDim + "×" + valueDim);
        }
    }

    /** Floats of one layer's convolution window: (K−1) × channels. */
    public int convFloats() { return (convKernel - 1) * convChannels; }

    /** Floats of one layer's delta-rule state: valueHeads × keyDim × valueDim. */
    public long stateFloats() { return (long) valueHeads * keyDim * valueDim; }

    /** Bytes of one sequence's whole recurrent state (float32), every linear layer. */
    public long bytesPerSequence() { return (long) layers * (convFloats() + stateFloats()) * Float.BYTES; }
}
