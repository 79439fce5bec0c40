package dev.forkpoint.tensor;

/**
 * Weight values computed on the host at load (norm weights shifted by one, a convolution kernel, a benchmark's
 * vector): a {@code rows} × {@code cols} row-major matrix, or a vector when {@code rows} is 1. The backend copies
 * the values.
 */
public record HostMatrix(String name, float[] values, int rows, int cols) implements WeightSource {}
