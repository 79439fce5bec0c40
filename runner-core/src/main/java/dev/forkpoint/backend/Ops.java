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

    // ---- hybrid (Gated DeltaNet) and mixture-of-experts parts ----

    /** Columns {@code columns[0]}, {@code columns[1]}, … of every row of x, in that order (splits fused projections). */
    Activation columns(Activation x, int[] columns);

    /**
     * Causal depthwise convolution over time, then SiLU, for linear layer {@code layer} of every segment's recurrent
     * state. {@code kernel} is channels × K (row c: the K taps of channel c, the last one multiplying the current
     * token). For each segment the window continues its carried state (the K−1 raw input rows before startPos; zeros
     * for a fresh sequence): out[t,c] = silu(Σ_j kernel[c,j] · xin[t+j, c]) with xin = [state ; x rows]. The new
     * window (the last K−1 raw rows of xin) is written to the open step's state, which the store's commit keeps and
     * rollback drops.
     */
    Activation causalConv1dSilu(Activation x, Weight kernel, List<Segment> segments, int layer);

    /** Each head of {@code headDim} values of every row: x / √(Σx² + eps) · scale (Gated DeltaNet's q/k norm). */
    Activation l2NormHeads(Activation x, int headDim, float eps, float scale);

    /**
     * The gated delta rule of linear layer {@code layer} over every segment's tokens, continuing the segment's state S
     * (valueHeads × keyDim × valueDim, zeros for a fresh sequence). q, k: tokens × keyHeads·keyDim (already
     * l2-normalised, q scaled); v: tokens × valueHeads·valueDim; a, b: tokens × valueHeads. Value head j reads key
     * head j / (valueHeads / keyHeads). Per token, per value head: g = −exp(aLog[j]) · softplus(a + dtBias[j]),
     * β = sigmoid(b); S ← S·exp(g); δ = (v − Sᵀk)·β; S ← S + k δᵀ; out = Sᵀq. The final state goes to the open step
     * (kept by commit, dropped by rollback). A backend may evaluate long segments in a chunked form; it must agree with
     * the token-by-token form. Returns tokens × valueHeads·valueDim.
     */
    Activation gatedDeltaRule(Activation q, Activation k, Activation v, Activation a, Activation b, Weight aLog,
                              Weight dtBias, List<Segment> segments, int layer, int keyHeads, int valueHeads,
                              int keyDim, int valueDim);

    /** Each head of {@code headDim} values: x / √(mean x² + eps) · gamma · silu(z) (gamma: headDim values). */
    Activation gatedRmsNorm(Activation x, Activation z, Weight gamma, int headDim, float eps);

    /** x ⊙ sigmoid(gate): gate has x's shape, or one column that scales each row. */
    Activation sigmoidGate(Activation x, Activation gate);

    /**
     * A sparse mixture-of-experts SwiGLU feed-forward: per row, p = softmax(x · routerᵀ) over the experts, the
     * {@code experts.topK()} largest chosen (weights p renormalised over them when {@code experts.renormalize()}),
     * out = Σ w_e · down_e(silu(gate_e x) ⊙ up_e x). Reads only the chosen experts' weights.
     */
    Activation moe(Activation x, ExpertWeights experts);

    /** Evaluates x · outputᵀ and copies the result to the host: one array of vocab logits per row of x. */
    float[][] logits(Activation x, Weight output);

    /**
     * Evaluates x and copies it to the host: one array of {@code x.width()} values per row (embeddings read the final
     * hidden states this way, without the output projection). Like {@link #logits}, it ends the pass.
     */
    float[][] hidden(Activation x);
}
