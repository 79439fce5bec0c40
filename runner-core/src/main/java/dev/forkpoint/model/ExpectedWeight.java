package dev.forkpoint.model;

/**
 * One weight of a dense transformer as its architecture expects it: its GGUF name, its shape in GGML order (elements
 * per row first), and whether the model must have it (optional ones — biases an architecture does not need, a tied
 * output — are checked when present). The loader and the converter check models against the same list
 * ({@link HfLayout#denseWeights}).
 */
public record ExpectedWeight(String name, long[] shape, boolean required) {}
