package dev.forkpoint.bench.probe;

import java.util.Arrays;

/**
 * The distribution summary every probe figure uses: count, min, p50, p95, p99, max and mean of a set of values.
 *
 * <p>Method: <b>linear interpolation between closest ranks</b>, numpy's default ({@code numpy.percentile(x, p)},
 * method "linear"; Hyndman and Fan's type 7). Sort the n values ascending as x[0] … x[n−1]; for p in 0 … 100 let
 * h = (n − 1)·p/100; then P(p) = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]). P(0) is the minimum, P(100) the maximum,
 * P(50) the ordinary median, and a single value is every percentile of itself. NaN values are dropped first (a sample
 * without a defined rate, such as a one-token reply's decode speed); with no values left every field is NaN and the
 * count is 0.
 */
public record Percentiles(int count, double min, double p50, double p95, double p99, double max, double mean) {

    public static Percentiles of(double[] values) {
        double[] sorted = Arrays.stream(values).filter(v -> !Double.isNaN(v)).sorted().toArray();
        if (sorted.length == 0) return new Percentiles(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
        double mean = Arrays.stream(sorted).sum() / sorted.length;
        return new Percentiles(sorted.length, sorted[0], ofSorted(sorted, 50), ofSorted(sorted, 95), ofSorted(sorted, 99),
                sorted[sorted.length - 1], mean);
    }

    /** The p-th percentile (0 ≤ p ≤ 100) of values already sorted ascending, by the method above. */
    static double ofSorted(double[] sorted, double p) {
        if (p < 0 || p > 100 || Double.isNaN(p)) throw new IllegalArgumentException("percentile must be in 0…100, got " + p);
        if (sorted.length == 0) return Double.NaN;
        double h = (sorted.length - 1) * p / 100;
        int lo = (int) Math.floor(h);
        int hi = Math.min(lo + 1, sorted.length - 1);
        return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
    }

    /** One line for the method, as written into the JSON report. */
    static final String METHOD = "linear interpolation between closest ranks (numpy.percentile default, Hyndman-Fan type 7)";
}
