package dev.forkpoint.reference;

import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every architecture in the Hugging Face / MLX layout: a random F32 GGUF model of each variant converted to an MLX
 * folder (float32, and 8-bit group 64) and loaded from the folder gives the logits of the float64 reference computed
 * from the GGUF file. This checks what the layouts change: tensor names, Llama's q/k row order with NeoX RoPE
 * (Qwen's rows are not permuted), q/k/v biases, per-head q/k norms, tied embeddings. Bounds as in
 * {@link ArchitectureLogitsTest}: F32 1e-4; 8-bit codes with int8 activations like Q8_0, 5e-2.
 * LLAMA_ROPE_FREQS is left out: its random divisors match no published rope_scaling, and the converter refuses them.
 */
class MlxArchitectureLogitsTest {
    @TempDir static Path dir;

    @ParameterizedTest
    @EnumSource(value = RandomModels.Variant.class, names = {"LLAMA", "LLAMA_TIED", "QWEN2", "QWEN3"})
    void folderLogitsMatchFloat64Reference(RandomModels.Variant variant) throws IOException {
        Path gguf = RandomModels.write(dir, variant, GgmlType.F32, ArchitectureLogitsTest.SEED);
        ReferenceTransformer reference;
        try (GgufFile file = GgufFile.open(gguf)) {
            reference = ReferenceTransformer.load(file);
        }
        int[] tokens = ArchitectureLogitsTest.sequence();
        double[] expected = reference.lastLogits(tokens);
        for (var c : new Object[][]{{"f32", MlxOptions.defaults().unquantised(), 1e-4}, {"q8", MlxOptions.defaults().withFormat(8, 64), 5e-2}}) {
            Path folder = dir.resolve(variant + "-" + c[0]);
            ModelConverter.toMlx(gguf, folder, (MlxOptions) c[1], (a, b) -> {});
            float[] actual;
            try (LoadedModel engine = LoadedModel.load(folder, 2, LoadProgress.NONE)) {
                assertEquals(variant.architecture, engine.config().architecture());
                actual = engine.logits(tokens);
            }
            double error = ReferenceLogits.relativeL2(actual, expected);
            double bound = (double) c[2];
            System.out.printf("MlxArchitectureLogitsTest %-10s %-3s error %.2e (bound %.0e)%n", variant, c[0], error, bound);
            assertTrue(error < bound, () -> variant + " " + c[0] + ": relative L2 error " + error + " ≥ " + bound);
            if (c[0].equals("f32")) assertArrayEquals(ReferenceLogits.topIds(expected, 5), ReferenceLogits.topIds(actual, 5), "top-5 ids");
        }
    }
}
