package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.ExpertRouting;

import dev.forkpoint.backend.ExpertWeights;
import dev.forkpoint.backend.ExpertWeights.ExpertRows;
import dev.forkpoint.backend.Weight;

import java.util.concurrent.atomic.LongAdder;

/**
 * The mixture-of-experts feed-forward on the CPU: routing, then each chosen expert's rows only.
 * <p>Per row x: logits = x · routerᵀ (the router's own kernel, all E rows), p = softmax(logits) (in double, stored
 * as float), the topK largest p chosen (a tie goes to the lower expert index), w = p (÷ Σ of the chosen p when
 * renormalising). The rows are then grouped by expert: each chosen expert multiplies its gate, up and down rows once
 * with all the n_e rows routed to it ({@link PackedMatrix#multiplyRows}, parallel over the rows with the pool; a
 * fused gate/up tensor whose expert's up rows follow its gate rows is one call of 2I rows), h = silu(g) ⊙ u, and
 * w_e · down_e(h) is added to each of its rows' outputs. Each output row sums its experts in ascending expert order,
 * starting from zero.
 * <p>Batching: an expert's n_e rows go through the decode kernels while n_e ≤ {@link KernelSupport#DECODE_MAX_ROWS},
 * whose per-row arithmetic does not depend on the batch, so a batch gives bit for bit the outputs of its rows one at
 * a time as long as no expert receives more rows than that; above it that expert's rows take the prefill GEMM (float
 * sums in another order: equal within float rounding, not bit for bit).
 * <p>Every weight byte the block reads is counted ({@link #weightBytesRead}): router rows + Σ over the chosen
 * experts of (gate + up + down rows) × bytes per row; a decode token reads router + topK experts' bytes.
 */
final class CpuMoe {
    private CpuMoe() {}

    private static final LongAdder WEIGHT_BYTES = new LongAdder();

    /** Weight bytes read by all forwards since the JVM started (or the last {@link #resetWeightBytesRead}). */
    static long weightBytesRead() { return WEIGHT_BYTES.sum(); }

    static void resetWeightBytesRead() { WEIGHT_BYTES.reset(); }

    static CpuActivation forward(CpuActivation x, ExpertWeights experts, WorkerPool pool) {
        int n = x.tokens(), dim = experts.dim(), count = experts.count(), topK = experts.topK(), ffn = experts.ffnDim();
        if (x.width() != dim) {
            throw new IllegalArgumentException("experts take " + dim + " inputs, the activation has " + x.width());
        }
        PackedMatrix router = matrix(experts.router());
        if (router.cols() != dim) {
            throw new IllegalArgumentException(experts.router().name() + " takes " + router.cols() + " inputs, the experts " + dim);
        }
        ExpertRows gate = experts.gate(), up = experts.up(), down = experts.down();

        float[] logits = new float[n * count];
        multiply(router, 0, count, x.data(), n, logits, pool);

        // routing: per row the chosen experts (ascending index) and their weights
        int[] chosen = new int[n * topK];
        float[] weights = new float[n * topK];
        int[] perExpert = new int[count];
        route(logits, n, count, topK, experts.renormalize(), chosen, weights, perExpert);

        // rows routed to each expert, in row order: tokens[start[e] … start[e + 1]), their weights alike
        int[] start = new int[count + 1];
        for (int e = 0; e < count; e++) start[e + 1] = start[e] + perExpert[e];
        int[] tokens = new int[n * topK];
        float[] tokenWeights = new float[n * topK];
        int[] fill = start.clone();
        for (int t = 0; t < n; t++) {
            for (int k = 0; k < topK; k++) {
                int e = chosen[t * topK + k], at = fill[e]++;
                tokens[at] = t;
                tokenWeights[at] = weights[t * topK + k];
            }
        }

        float[] in = x.data();
        float[] out = new float[n * dim];
        boolean fused = gate.perExpert() == null && up.perExpert() == null && gate.weight() == up.weight()
                && up.stride() == gate.stride() && up.offset() == gate.offset() + ffn;
        for (int e = 0; e < count; e++) {
            int ne = perExpert[e];
            if (ne == 0) continue;
            PackedMatrix gm = matrix(gate.weight(e)), um = matrix(up.weight(e)), dm = matrix(down.weight(e));
            int s0 = start[e];
            float[] xe;
            if (ne == n) {
                xe = in;   // every row (a single decode row, say), in order
            } else {
                xe = new float[ne * dim];
                for (int i = 0; i < ne; i++) System.arraycopy(in, tokens[s0 + i] * dim, xe, i * dim, dim);
            }
            float[] h = new float[ne * ffn];
            if (fused) {
                float[] gu = new float[ne * 2 * ffn];
                multiply(gm, gate.firstRow(e), 2 * ffn, xe, ne, gu, pool);
                for (int i = 0; i < ne; i++) swiglu(gu, i * 2 * ffn, gu, i * 2 * ffn + ffn, h, i * ffn, ffn);
            } else {
                float[] g = new float[ne * ffn], u = new float[ne * ffn];
                multiply(gm, gate.firstRow(e), ffn, xe, ne, g, pool);
                multiply(um, up.firstRow(e), ffn, xe, ne, u, pool);
                for (int i = 0; i < ne; i++) swiglu(g, i * ffn, u, i * ffn, h, i * ffn, ffn);
            }
            float[] y = new float[ne * dim];
            multiply(dm, down.firstRow(e), dim, h, ne, y, pool);
            for (int i = 0; i < ne; i++) {
                float w = tokenWeights[s0 + i];
                int o = tokens[s0 + i] * dim, yo = i * dim;
                for (int c = 0; c < dim; c++) out[o + c] += w * y[yo + c];
            }
        }
        return new CpuActivation(out, n, dim);
    }

    private static PackedMatrix matrix(Weight w) {
        PackedMatrix m = ((CpuWeight) w).matrix();
        if (m == null) throw new IllegalArgumentException(w.name() + " is not a matrix");
        return m;
    }

    private static void multiply(PackedMatrix m, int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool) {
        m.multiplyRows(firstRow, rowCount, x, n, out, pool);
        WEIGHT_BYTES.add(rowCount * m.rowBytes());
    }

    /** h[ho + j] = silu(g[go + j]) · u[uo + j] for j &lt; len, silu(v) = v / (1 + e^−v) (as {@link CpuOps#swiglu}). */
    private static void swiglu(float[] g, int go, float[] u, int uo, float[] h, int ho, int len) {
        for (int j = 0; j < len; j++) {
            float v = g[go + j];
            h[ho + j] = v / (1 + (float) Math.exp(-v)) * u[uo + j];
        }
    }

    /** {@link ExpertRouting#route} (every backend routes alike), counting the rows of each expert. */
    static void route(float[] logits, int n, int count, int topK, boolean renormalize, int[] chosen, float[] weights,
                      int[] perExpert) {
        ExpertRouting.route(logits, n, count, topK, renormalize, chosen, weights, perExpert);
    }
}
