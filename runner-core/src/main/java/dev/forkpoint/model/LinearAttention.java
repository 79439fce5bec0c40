package dev.forkpoint.model;

import dev.forkpoint.backend.RecurrentLayout;

/**
 * The Gated DeltaNet (linear attention) part of a hybrid model: which layers are linear, and their shape.
 *
 * @param linearLayers per layer, whether it is a linear-attention layer (else full attention)
 * @param convKernel   K, the causal convolution's taps
 */
public record LinearAttention(int keyHeads, int valueHeads, int keyDim, int valueDim, int convKernel, boolean[] linearLayers) {
    public LinearAttention {
        if (keyHeads < 1 || valueHeads < 1 || keyDim < 1 || valueDim < 1 || convKernel < 1) {
            throw new IllegalArgumentException("linear attention sizes must be positive");
        }
        if (valueHeads % keyHeads != 0) {
            throw new IllegalArgumentException("linear_num_value_heads " + valueHeads + " is not a multiple of linear_num_key_heads " + keyHeads);
        }
        linearLayers = linearLayers.clone();
    }

    public boolean isLinear(int layer) { return linearLayers[layer]; }

    /** Channels of the fused q ‖ k ‖ v projection that the convolution runs over: 2·Hk·Dk + Hv·Dv. */
    public int convChannels() { return 2 * keyHeads * keyDim + valueHeads * valueDim; }

    public int linearCount() {
        int n = 0;
        for (boolean b : linearLayers) if (b) n++;
        return n;
    }

    /** The index of layer {@code layer} among the layers of its kind (linear or attention). */
    public int indexAmongKind(int layer) {
        int n = 0;
        for (int i = 0; i < layer; i++) if (linearLayers[i] == linearLayers[layer]) n++;
        return n;
    }

    /** The state one sequence keeps for every linear layer. */
    public RecurrentLayout recurrentLayout() {
        return new RecurrentLayout(linearCount(), convChannels(), convKernel, valueHeads, keyDim, valueDim);
    }

    /** "linear ×3, attention" style summary: each layer's kind, runs compressed. */
    public String layerKinds() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < linearLayers.length; ) {
            int j = i;
            while (j < linearLayers.length && linearLayers[j] == linearLayers[i]) j++;
            if (!sb.isEmpty()) sb.append(", ");
            sb.append(linearLayers[i] ? "linear" : "attention");
            if (j - i > 1) sb.append(" ×").append(j - i);
            i = j;
        }
        return sb.toString();
    }
}
