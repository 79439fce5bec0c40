package dev.forkpoint.sampling;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vectorised passes over the first {@code n} logits, the per-token O(vocabulary) work of the sampler. NaN logits
 * are skipped by every pass. Loops stay within {@code n} (array bounds checks may be disabled).
 */
final class LogitScan {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    /** Terms computed per vectorised step of {@link #sumExp} (a multiple of every vector length). */
    private static final int BLOCK = 256;

    private LogitScan() {
    }

    /** The largest value, NaN ignored; −∞ when there is none. */
    static float max(float[] l, int n) {
        int i = 0;
        float best = Float.NEGATIVE_INFINITY;
        int upper = S.loopBound(n);
        if (upper > 0) {
            FloatVector acc = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
            for (; i < upper; i += S.length()) {
                FloatVector v = FloatVector.fromArray(S, l, i);
                acc = acc.blend(v, v.compare(VectorOperators.GT, acc)); // NaN compares false
            }
            best = acc.reduceLanes(VectorOperators.MAX);
        }
        for (; i < n; i++) if (l[i] > best) best = l[i];
        return best;
    }

    /** The lowest index {@code ≥ from} whose value is greater than {@code threshold}, or n. */
    static int nextAbove(float[] l, int from, int n, float threshold) {
        int i = from;
        int upper = from + S.loopBound(n - from);
        for (; i < upper; i += S.length()) {
            VectorMask<Float> m = FloatVector.fromArray(S, l, i).compare(VectorOperators.GT, threshold);
            if (m.anyTrue()) return i + m.firstTrue();
        }
        for (; i < n; i++) if (l[i] > threshold) return i;
        return n;
    }

    /** The lowest index {@code ≥ from} whose value is at least {@code threshold}, or n. */
    static int nextAtLeast(float[] l, int from, int n, float threshold) {
        int i = from;
        int upper = from + S.loopBound(n - from);
        for (; i < upper; i += S.length()) {
            VectorMask<Float> m = FloatVector.fromArray(S, l, i).compare(VectorOperators.GE, threshold);
            if (m.anyTrue()) return i + m.firstTrue();
        }
        for (; i < n; i++) if (l[i] >= threshold) return i;
        return n;
    }

    /** The lowest index whose value equals {@code value} (not NaN), or n. */
    static int indexOf(float[] l, int n, float value) {
        int i = 0;
        int upper = S.loopBound(n);
        for (; i < upper; i += S.length()) {
            VectorMask<Float> m = FloatVector.fromArray(S, l, i).compare(VectorOperators.EQ, value);
            if (m.anyTrue()) return i + m.firstTrue();
        }
        for (; i < n; i++) if (l[i] == value) return i;
        return n;
    }

    /**
     * Σ exp((l[i] − max) · scale) over non-NaN values, in index order in double; max must be finite and ≥ every
     * value. The terms are floats from a vectorised exp, identical to those {@link #cumulativeExpSearch} walks.
     */
    static double sumExp(float[] l, int n, float max, float scale) {
        float[] buf = new float[BLOCK];
        double total = 0;
        for (int start = 0; start < n; start += BLOCK) {
            int end = Math.min(n, start + BLOCK);
            terms(l, start, end, max, scale, buf);
            for (int k = 0, m = end - start; k < m; k++) total += buf[k];
        }
        return total;
    }

    /**
     * The first index at which the running sum of the terms of {@link #sumExp} exceeds {@code target}; when
     * rounding leaves it short (target at the total), the last index with a positive term.
     */
    static int cumulativeExpSearch(float[] l, int n, float max, float scale, double target) {
        float[] buf = new float[BLOCK];
        double cum = 0;
        int lastPositive = 0;
        for (int start = 0; start < n; start += BLOCK) {
            int end = Math.min(n, start + BLOCK);
            terms(l, start, end, max, scale, buf);
            for (int k = 0, m = end - start; k < m; k++) {
                float w = buf[k];
                if (w > 0) {
                    cum += w;
                    lastPositive = start + k;
                    if (cum > target) return start + k;
                }
            }
        }
        return lastPositive;
    }

    /** out[i] = exp((l[i] − max) · scale) for i in [0, n), 0 for NaN (the terms of {@link #sumExp}); returns their sum. */
    static double expInto(float[] l, int n, float max, float scale, float[] out) {
        double total = 0;
        for (int start = 0; start < n; start += BLOCK) {
            int end = Math.min(n, start + BLOCK);
            terms(l, start, end, max, scale, out, start);
            for (int i = start; i < end; i++) total += out[i];
        }
        return total;
    }

    /** out[j] = exp((l[ids[j]] − max) · scale) for j in [0, n), gathered; returns their sum (in order, in double). */
    static double gatherExpInto(float[] l, int[] ids, int n, float max, float scale, float[] out) {
        int j = 0;
        int upper = S.loopBound(n);
        for (; j < upper; j += S.length()) {
            FloatVector v = FloatVector.fromArray(S, l, 0, ids, j);
            v.sub(max).mul(scale).lanewise(VectorOperators.EXP).intoArray(out, j);
        }
        for (; j < n; j++) out[j] = (float) Math.exp((l[ids[j]] - max) * scale);
        double total = 0;
        for (int k = 0; k < n; k++) total += out[k];
        return total;
    }

    private static void terms(float[] l, int start, int end, float max, float scale, float[] buf) {
        terms(l, start, end, max, scale, buf, 0);
    }

    /** buf[i − start + offset] = exp((l[i] − max) · scale) for i in [start, end), 0 for NaN. */
    private static void terms(float[] l, int start, int end, float max, float scale, float[] buf, int offset) {
        int i = start;
        int upper = start + S.loopBound(end - start);
        int shift = offset - start;
        for (; i < upper; i += S.length()) {
            FloatVector v = FloatVector.fromArray(S, l, i);
            FloatVector e = v.sub(max).mul(scale).lanewise(VectorOperators.EXP);
            e.blend(0f, v.test(VectorOperators.IS_NAN)).intoArray(buf, i + shift);
        }
        for (; i < end; i++) buf[i + shift] = l[i] == l[i] ? (float) Math.exp((l[i] - max) * scale) : 0f;
    }
}
