package dev.forkpoint.reference;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Shows that {@link ArchitectureLogitsTest}'s bounds can tell a missing feature from rounding: leaving out the
 * Llama 3 RoPE factors or the Qwen2 biases (weights otherwise identical) moves the logits by far more than the
 * loosest bound (measured: 0.25 and 0.68 relative L2, against the loosest bound 8e-2).
 */
class DiscriminationTest {
    @TempDir
    Path dir;

    private double effectOfOmitting(RandomModels.Variant variant, Predicate<String> omit) throws IOException {
        Path full = RandomModels.write(dir, variant, GgmlType.F32, ArchitectureLogitsTest.SEED);
        Path partial = dir.resolve("partial.gguf");
        RandomModels.write(partial, variant, GgmlType.F32, ArchitectureLogitsTest.SEED, omit);
        int[] tokens = ArchitectureLogitsTest.sequence();
        double[] expected, changed;
        try (GgufFile f = GgufFile.open(full)) { expected = ReferenceTransformer.load(f).lastLogits(tokens); }
        try (GgufFile f = GgufFile.open(partial)) { changed = ReferenceTransformer.load(f).lastLogits(tokens); }
        float[] asFloat = new float[changed.length];
        for (int i = 0; i < changed.length; i++) asFloat[i] = (float) changed[i];
        double effect = ReferenceLogits.relativeL2(asFloat, expected);
        System.out.printf("DiscriminationTest %s without some tensors: relative L2 change %.3e%n", variant, effect);
        return effect;
    }

    @Test
    void ignoringRopeFactorsExceedsEveryBound() throws IOException {
        double effect = effectOfOmitting(RandomModels.Variant.LLAMA_ROPE_FREQS, "rope_freqs.weight"::equals);
        assertTrue(effect > 2 * ArchitectureLogitsTest.bound(GgmlType.Q4_K), "effect " + effect);
    }

    @Test
    void ignoringQwen2BiasesExceedsEveryBound() throws IOException {
        double effect = effectOfOmitting(RandomModels.Variant.QWEN2, name -> name.endsWith(".bias"));
        assertTrue(effect > 2 * ArchitectureLogitsTest.bound(GgmlType.Q4_K), "effect " + effect);
    }
}
