package dev.forkpoint.reference;

import java.util.Comparator;
import java.util.stream.IntStream;

/** Comparisons of logit vectors. */
final class ReferenceLogits {
    private ReferenceLogits() {}

    /** ||actual − expected||₂ / ||expected||₂. */
    static double relativeL2(float[] actual, double[] expected) {
        if (actual.length != expected.length) {
            throw new AssertionError("logits of length " + actual.length + ", expected " + expected.length);
        }
        double diff = 0, norm = 0;
        for (int i = 0; i < expected.length; i++) {
            double d = actual[i] - expected[i];
            diff += d * d;
            norm += expected[i] * expected[i];
        }
        return Math.sqrt(diff / norm);
    }

    static float[] toFloats(double[] v) {
        float[] out = new float[v.length];
        for (int i = 0; i < v.length; i++) out[i] = (float) v[i];
        return out;
    }

    /** The ids of the {@code k} largest values, largest first (ties by lower id). */
    static int[] topIds(double[] logits, int k) {
        return IntStream.range(0, logits.length).boxed()
                .sorted(Comparator.<Integer>comparingDouble(i -> -logits[i]).thenComparing(i -> i))
                .limit(k).mapToInt(Integer::intValue).toArray();
    }

    static int[] topIds(float[] logits, int k) {
        double[] d = new double[logits.length];
        for (int i = 0; i < d.length; i++) d[i] = logits[i];
        return topIds(d, k);
    }
}
