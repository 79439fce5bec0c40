package dev.forkpoint.backend;

/**
 * How a mixture of experts picks its experts from the router's logits — a property of the model, so every backend
 * routes the same tokens to the same experts with the same weights (the CPU backend's {@code CpuMoe} and the MLX
 * backend both route on the host through this).
 */
public final class ExpertRouting {
    private ExpertRouting() {}

    /**
     * Per row t: p = softmax(logits[t·count …]), the topK largest (ties to the lower index), written to chosen[t·topK …]
     * in ascending expert index with their weights (p, or p / Σ chosen p), p in double; perExpert (when not null) counts
     * the rows of each expert.
     */
    public static void route(float[] logits, int n, int count, int topK, boolean renormalize, int[] chosen, float[] weights,
                      int[] perExpert) {
        float[] p = new float[count];
        boolean[] taken = new boolean[count];
        int[] pick = new int[topK];
        double[] ex = new double[count];
        for (int t = 0; t < n; t++) {
            int o = t * count;
            float max = Float.NEGATIVE_INFINITY;
            for (int e = 0; e < count; e++) max = Math.max(max, logits[o + e]);
            double sum = 0;
            for (int e = 0; e < count; e++) {
                ex[e] = Math.exp((double) logits[o + e] - max);
                sum += ex[e];
            }
            for (int e = 0; e < count; e++) {
                p[e] = (float) (ex[e] / sum);
                taken[e] = false;
            }
            for (int k = 0; k < topK; k++) {
                int best = -1;
                for (int e = 0; e < count; e++) {
                    // strictly greater: of equal p the lowest index is kept; a NaN p is never chosen over a number
                    if (!taken[e] && (best < 0 || p[e] > p[best] || (Float.isNaN(p[best]) && !Float.isNaN(p[e])))) best = e;
                }
                taken[best] = true;
                pick[k] = best;
            }
            java.util.Arrays.sort(pick);
            double total = 0;
            for (int k = 0; k < topK; k++) total += p[pick[k]];
            for (int k = 0; k < topK; k++) {
                int e = pick[k];
                chosen[t * topK + k] = e;
                weights[t * topK + k] = renormalize ? (float) (p[e] / total) : p[e];
                if (perExpert != null) perExpert[e]++;
            }
        }
    }
}
