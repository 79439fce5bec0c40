package dev.forkpoint.reference;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.reference.ReferenceTransformer.ActivationRounding;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Grounds the bounds of {@link ArchitectureLogitsTest}: the reference run with the activation rounding an engine may
 * legitimately apply for a weight type (llama.cpp's choice) must stay well inside that type's bound — at most half
 * of it — on every variant. If this fails, the bound is too tight to tell rounding from a bug.
 */
class ActivationRoundingBoundsTest {
    @TempDir
    static Path dir;

    /** The activation format llama.cpp uses for the dot products of each weight type. */
    static final Map<GgmlType, ActivationRounding> LLAMA_CPP_ACTIVATIONS = Map.of(
            GgmlType.F32, ActivationRounding.NONE,
            GgmlType.F16, ActivationRounding.F16,
            GgmlType.BF16, ActivationRounding.BF16,
            GgmlType.Q8_0, ActivationRounding.Q8_BLOCKS_OF_32,
            GgmlType.Q4_0, ActivationRounding.Q8_BLOCKS_OF_32,
            GgmlType.Q4_K, ActivationRounding.Q8_BLOCKS_OF_256,
            GgmlType.Q6_K, ActivationRounding.Q8_BLOCKS_OF_256);

    @ParameterizedTest
    @EnumSource(RandomModels.Variant.class)
    void simulatedActivationRoundingStaysWithinHalfTheBound(RandomModels.Variant variant) throws IOException {
        Path model = RandomModels.write(dir, variant, GgmlType.F32, ArchitectureLogitsTest.SEED);
        int[] tokens = ArchitectureLogitsTest.sequence();
        try (GgufFile file = GgufFile.open(model)) {
            ReferenceTransformer reference = ReferenceTransformer.load(file);
            double[] exact = reference.lastLogits(tokens);
            for (GgmlType type : RandomModels.TYPES) {
                ActivationRounding rounding = LLAMA_CPP_ACTIVATIONS.get(type);
                if (rounding == ActivationRounding.NONE) continue;
                double[] rounded = reference.lastLogits(tokens, rounding);
                float[] asFloat = new float[rounded.length];
                for (int i = 0; i < rounded.length; i++) asFloat[i] = (float) rounded[i];
                double error = ReferenceLogits.relativeL2(asFloat, exact);
                double bound = ArchitectureLogitsTest.bound(type);
                assertTrue(error < bound / 2, () -> variant + " " + type + " (" + rounding + "): simulated error " + error
                        + " is not below half the bound " + bound);
            }
        }
    }
}
