package dev.forkpoint.backend;

import java.util.List;

/**
 * The operations an architecture describes its graph with. A backend implements them eagerly (the CPU backend) or
 * by building a lazy graph (MLX). Every activation is a matrix of tokens × width; ops never modify their inputs.
 */
public interface Ops {
    /** Rows of {@code table} (vocab × dim) for each token id. */
    Activation embed(Weight table, int[] tokens);

    /** Per row: x / sqrt(mean(x²) + eps) · gamma. */
    Activation rmsNorm(Activation x, Weight gamma, float eps);

    /** RMSNorm applied to each head of {@code headDim} values separately, with one gamma of headDim (Qwen3 q/k norm). */
    Activation rmsNormHeads(Activation x, Weight gamma, int headDim, float eps);

    /** x · Wᵀ: tokens × w.cols → tokens × w.rows, reading w in its stored (possibly quantised) type. */
    Activation matmul(Activation x, Weight w);

    /** x + bias, the bias broadcast over rows. */
    Activation addBias(Activation x, Weight bias);

    /** Rotates each head of {@code headDim} values of row t by position {@code positions[t]}. */
    Activation rope(Activation x, int headDim, int[] positions, Rope rope);

    /**
     * Causal attention with grouped-query heads over several sequences at once: the rows of q, k and v are the
     * {@code segments}' tokens one after another. For each segment, stores its rows of k and v (kvHeads·headDim
     * each) for {@code layer} in its store at positions startPos … startPos+n−1, then lets its query row t attend to
     * positions 0 … startPos+t of that store only. Scores are scaled by 1/√headDim. Each row's result is exactly
     * what a pass over its segment alone gives. Returns tokens × heads·headDim.
     */
    Activation attention(Activation q, Activation k, Activation v, List<Segment> segments, int layer,
                         int heads, int kvHeads, int headDim);

    /** {@link #attention(Activation, Activation, Activation, List, int, int, int, int)} for one sequence. */
    default Activation attention(Activation q, Activation k, Activation v, KvStore kv, int layer, int startPos,
                                 int heads, int kvHeads, int headDim) {
        return attention(q, k, v, List.of(new Segment(new int[q.tokens()], startPos, kv)), layer, heads, kvHeads, headDim);
    }

    /** silu(gate) ⊙ up. */
    Activation swiglu(Activation gate, Activation up);

    /** a + b. */
    Activation add(Activation a, Activation b);

    /** Rows {@code rows[0]}, {@code rows[1]}, … of x, in that order, as a rows.length-token activation. */
    Activation rows(Activation x, int[] rows);

    /** Evaluates x · outputᵀ and copies the result to the host: one array of vocab logits per row of x. */
    float[][] logits(Activation x, Weight output);
}
