package dev.forkpoint.model;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * One weight as its architecture expects it: its GGUF name, the shapes it may have in GGML order (elements per row
 * first; several where layouts differ, as a hybrid's convolution does between Hugging Face, mlx-lm and GGUF), whether
 * the model must have it, and the weights that may stand in for it ({@code instead}: another layout of the same
 * thing, such as GGUF's {@code ssm_a} for {@code ssm_a_log}). Optional weights (biases an architecture does not need,
 * a tied output) are checked when present. The loader and the converter check models against the same list
 * ({@link HfLayout#weights}).
 */
public record ExpectedWeight(String name, List<long[]> shapes, boolean required, List<String> instead) {
    public ExpectedWeight {
        if (shapes.isEmpty()) throw new IllegalArgumentException(name + ": no shape");
        shapes = List.copyOf(shapes);
        instead = List.copyOf(instead);
    }

    /** A weight of one shape that nothing stands in for. */
    ExpectedWeight(String name, long[] shape, boolean required) {
        this(name, List.<long[]>of(shape), required, List.of());
    }

    /** Whether {@code shape} (GGML order) is one this weight may have. */
    public boolean fits(long[] shape) {
        return shapes.stream().anyMatch(s -> Arrays.equals(s, shape));
    }

    /** "[64, 128]" or "[4, 1, 96] or [1, 4, 96]", for messages. */
    String shapesString() {
        return shapes.stream().map(Arrays::toString).collect(Collectors.joining(" or "));
    }
}
