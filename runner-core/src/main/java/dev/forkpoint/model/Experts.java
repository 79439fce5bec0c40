package dev.forkpoint.model;

/**
 * The mixture-of-experts part of a model.
 *
 * @param count        experts per sparse layer
 * @param topK         experts chosen per token
 * @param ffnDim       hidden width of one expert
 * @param sharedFfnDim hidden width of the shared expert, 0 when there is none
 * @param renormalize  whether the chosen experts' probabilities are rescaled to sum to 1
 * @param sparseLayers per layer, whether its feed-forward is the mixture (else dense, of the model's ffnDim)
 */
public record Experts(int count, int topK, int ffnDim, int sharedFfnDim, boolean renormalize, boolean[] sparseLayers) {
    public Experts {
        if (count < 1 || topK < 1 || topK > count) throw new IllegalArgumentException("experts: top-" + topK + " of " + count);
        if (ffnDim < 1 || sharedFfnDim < 0) throw new IllegalArgumentException("expert widths must be positive");
        sparseLayers = sparseLayers.clone();
    }

    public boolean isSparse(int layer) { return sparseLayers[layer]; }
}
