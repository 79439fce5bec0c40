package dev.forkpoint.metal.mlxc;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One application of an {@link MlxMetalKernel}: the grid in threads and the threadgroup size (as Metal's
 * {@code dispatchThreads} takes them), the template arguments that make the instantiation (ints and dtypes, in
 * order), and each output's shape and dtype.
 */
public record KernelLaunch(int[] grid, int[] threadgroup, Map<String, Integer> intArgs, Map<String, Integer> dtypeArgs,
                           List<Output> outputs) {

    /** An output of {@code shape} elements of {@code dtype} (an {@code MLX_*} constant). */
    public record Output(int[] shape, int dtype) {
        public Output {
            shape = shape.clone();
        }
    }

    public KernelLaunch {
        if (grid.length != 3 || threadgroup.length != 3) throw new IllegalArgumentException("grid and threadgroup have three dimensions");
        for (int i = 0; i < 3; i++) {
            if (grid[i] < 1 || threadgroup[i] < 1 || grid[i] % threadgroup[i] != 0) {
                throw new IllegalArgumentException("grid dimension " + i + " (" + grid[i] + ") is not a positive multiple of the threadgroup's (" + threadgroup[i] + ")");
            }
        }
        grid = grid.clone();
        threadgroup = threadgroup.clone();
        intArgs = new LinkedHashMap<>(intArgs);
        dtypeArgs = new LinkedHashMap<>(dtypeArgs);
        outputs = List.copyOf(outputs);
    }

    /** Threads per threadgroup: what the pipeline's limit bounds. */
    public int threadsPerThreadgroup() {
        return threadgroup[0] * threadgroup[1] * threadgroup[2];
    }
}
