package dev.forkpoint.reference;

import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.nio.file.Path;

/** {@link RandomModels} for tests of other packages. */
public final class RandomModelsAccess {
    private RandomModelsAccess() {}

    /** The seeded random Qwen3 (F32) in {@code dir}. */
    public static Path qwen3(Path dir, long seed) throws IOException {
        return RandomModels.write(dir, RandomModels.Variant.QWEN3, GgmlType.F32, seed);
    }
}
