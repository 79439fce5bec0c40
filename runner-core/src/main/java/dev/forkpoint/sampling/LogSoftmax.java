package dev.forkpoint.sampling;

/**
 * The pieces of a log-softmax over a vocabulary's logits at a temperature, computed only when log-probabilities are
 * asked for: the normaliser (one vectorised pass) and the most likely ids (one pass keeping a small sorted list).
 * NaN logits are ignored (they are never chosen and never listed).
 */
public final class LogSoftmax {
    private final float max;
    private final double scale;
    private final double logSum;
    private final int atInfinity;   // logits at +∞ (they share all the mass), 0 when the largest is finite

    /**
     * @param logits      the model's logits (not modified)
     * @param n           the vocabulary size (logits beyond it are ignored)
     * @param temperature the sampling temperature; 0 (greedy) counts as 1
     * @throws IllegalArgumentException when no logit is above −∞
     */
    public LogSoftmax(float[] logits, int n, double temperature) {
        this.max = LogitScan.max(logits, n);
        if (max == Float.NEGATIVE_INFINITY) throw new IllegalArgumentException("no logit above -infinity");
        this.scale = temperature > 0 ? 1.0 / temperature : 1.0;
        if (max == Float.POSITIVE_INFINITY) {   // the tokens at +∞ share the mass equally, the rest have none
            int c = 0;
            for (int i = 0; i < n; i++) if (logits[i] == Float.POSITIVE_INFINITY) c++;
            this.atInfinity = c;
            this.logSum = Math.log(c);
            return;
        }
        this.atInfinity = 0;
        float s = (float) scale;
        double sum;
        if (Float.isFinite(s) && s > 0) {
            sum = LogitScan.sumExp(logits, n, max, s);
        } else {   // a temperature so small that 1/T overflows a float: scalar double
            sum = 0;
            for (int i = 0; i < n; i++) {
                float l = logits[i];
                if (!Float.isNaN(l)) sum += Math.exp((l - (double) max) * scale);
            }
        }
        this.logSum = Math.log(sum);
    }

    /** log p(id) = (logit − max)/T − log Σ exp((l − max)/T); −∞ for a logit at −∞, NaN for a NaN logit. */
    public double logprob(float logit) {
        if (atInfinity > 0) return logit == Float.POSITIVE_INFINITY ? -logSum : Float.isNaN(logit) ? Double.NaN : Double.NEGATIVE_INFINITY;
        return ((double) logit - max) * scale - logSum;
    }

    /**
     * Writes into {@code out} the ids of the {@code out.length} largest logits, largest first (equal logits: the lower id
     * first), NaN skipped; returns how many were written (fewer when the vocabulary has fewer non-NaN logits).
     */
    public static int top(float[] logits, int n, int[] out) {
        int k = out.length, count = 0;
        if (k == 0) return 0;
        for (int i = 0; i < n; i++) {
            float l = logits[i];
            if (Float.isNaN(l)) continue;
            if (count == k && !(l > logits[out[k - 1]])) continue;   // ties with the last kept: the lower id stays
            int at = count == k ? k - 1 : count++;
            while (at > 0 && l > logits[out[at - 1]]) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = i;
        }
        return count;
    }
}
