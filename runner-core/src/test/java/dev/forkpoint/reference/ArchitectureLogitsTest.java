package dev.forkpoint.reference;

import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * For every architecture variant × tensor type of {@link RandomModels}, the engine's logits for a 12-token sequence
 * must match the float64 {@link ReferenceTransformer} run over the same (dequantized) weights.
 *
 * <p>Bounds on the relative L2 error ‖engine − reference‖ / ‖reference‖ of the last position's logits. The reference
 * uses exactly the weights stored in the file, so any error comes from how the engine rounds activations:
 * <ul>
 *   <li>F32: float32 accumulation only — bound 1e-4.</li>
 *   <li>F16 / BF16: weights are exact in float32, but the engine may round activations to the weight type before
 *       the dot product, as llama.cpp does (F16: 11-bit significand, BF16: 8-bit).</li>
 *   <li>Q8_0, Q4_0, Q4_K, Q6_K: the engine quantizes activations to 8 bits per block (Q8_0 blocks of 32 for
 *       Q8_0/Q4_0, Q8_K blocks of 256 for the K types), like llama.cpp.</li>
 * </ul>
 * The expected error of each type was measured by running the reference with that activation rounding applied to
 * every matrix input ({@link ReferenceTransformer.ActivationRounding}) over all five variants; each bound is about
 * 4× the largest value measured, see {@link #bound}.
 */
class ArchitectureLogitsTest {
    @TempDir
    static Path dir;

    static final long SEED = 42;

    /** A BOS followed by 11 seeded byte tokens. */
    static int[] sequence() {
        var random = new Random(7);
        int[] tokens = new int[12];
        tokens[0] = RandomModels.BOS;
        for (int i = 1; i < tokens.length; i++) tokens[i] = random.nextInt(RandomModels.BYTE_TOKENS);
        return tokens;
    }

    static Stream<Arguments> cases() {
        return Stream.of(RandomModels.Variant.values())
                .flatMap(v -> RandomModels.TYPES.stream().map(t -> Arguments.of(v, t)));
    }

    /**
     * The bound on the relative L2 error for weights of {@code type}. Simulated errors (the reference with activations
     * rounded as llama.cpp rounds them, seeds 42/1/2, all five variants; worst case): F16 5.1e-4, BF16 3.7e-3,
     * Q8 blocks of 32 (Q8_0, Q4_0) 1.5e-2, Q8 blocks of 256 (Q4_K, Q6_K) 2.2e-2 — Gaussian activations have
     * block maxima of 2.5–3.5 σ, so an 8-bit step is 2–3 % of σ. Each bound is 3.5–4× that worst case, still far
     * below what a structural defect (wrong RoPE pairing, a missing bias or norm) does to logits of rms ≈ 1.
     * {@link ActivationRoundingBoundsTest} keeps the simulation below half of each bound.
     * Measured on the engine (main + kernels, 2 December 2026), worst variant: F32 3.1e-7, F16 4.1e-7, BF16 3.1e-7
     * (it computes F16/BF16 dot products in float32), Q8_0 1.6e-2, Q4_0 1.6e-2, Q4_K 2.6e-2, Q6_K 2.5e-2 (tied
     * variant; the others 1.1–1.9e-2).
     */
    static double bound(GgmlType type) {
        return switch (type) {
            case F32 -> 1e-4;
            case F16 -> 2e-3;
            case BF16 -> 1.5e-2;
            case Q8_0, Q4_0 -> 5e-2;
            case Q4_K, Q6_K -> 8e-2;
            default -> throw new IllegalArgumentException("no bound for " + type);
        };
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void engineLogitsMatchFloat64Reference(RandomModels.Variant variant, GgmlType type) throws IOException {
        Path model = RandomModels.write(dir, variant, type, SEED);
        ReferenceTransformer reference;
        try (GgufFile file = GgufFile.open(model)) {
            reference = ReferenceTransformer.load(file);
        }
        int[] tokens = sequence();
        double[] expected = reference.lastLogits(tokens);
        float[] actual;
        try (LoadedModel engine = LoadedModel.load(model, 2, LoadProgress.NONE)) {
            actual = engine.logits(tokens);
        }
        assertEquals(RandomModels.VOCAB, actual.length, "logit count");
        double error = ReferenceLogits.relativeL2(actual, expected);
        System.out.printf("ArchitectureLogitsTest %-16s %-5s relative L2 error %.3e (bound %.1e)%n", variant, type, error, bound(type));
        assertTrue(error < bound(type), () -> variant + " " + type + ": relative L2 error " + error + " ≥ " + bound(type));
        if (type == GgmlType.F32) {
            assertArrayEquals(ReferenceLogits.topIds(expected, 5), ReferenceLogits.topIds(actual, 5), "top-5 ids");
        }
    }
}
