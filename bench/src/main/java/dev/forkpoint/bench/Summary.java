package dev.forkpoint.bench;

import java.util.Arrays;

/** Median and range of a set of measurements. */
record Summary(double median, double min, double max, int count) {

    static Summary of(double[] values) {
        if (values.length == 0) return new Summary(Double.NaN, Double.NaN, Double.NaN, 0);
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        return new Summary(median, sorted[0], sorted[n - 1], n);
    }
}
