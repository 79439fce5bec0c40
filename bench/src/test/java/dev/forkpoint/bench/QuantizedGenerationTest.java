package dev.forkpoint.bench;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Quantised files carry the planned types, and their weights decode to the same seeded values the F16 file holds,
 * within each format's rounding error.
 */
class QuantizedGenerationTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"Q8_0, 0.01", "Q4_0, 0.15", "Q4_K_M, 0.15"})
    void quantisedWeightsDecodeToTheSeededValues(FileType type, double maxRelativeRmsError) throws Exception {
        Path f16 = new SyntheticModelWriter(ModelShape.TINY, FileType.F16, 9, true, 2).write(dir.resolve("f16.gguf")).path();
        var writer = new SyntheticModelWriter(ModelShape.TINY, type, 9, true, 2);
        Path quantised = writer.write(dir.resolve(type + ".gguf")).path();
        try (GgufFile ref = GgufFile.open(f16); GgufFile q = GgufFile.open(quantised)) {
            for (TensorPlan p : writer.plans()) {
                GgufTensor t = q.tensor(p.name());
                assertEquals(p.type(), t.type(), p.name());
                assertArrayEquals(p.shape(), t.shape(), p.name());
                if (p.type() == GgmlType.F32) continue;
                int n = Math.toIntExact(t.elementCount());
                float[] expected = new float[n], actual = new float[n];
                Quantization.dequantize(GgmlType.F16, ref.tensor(p.name()).data(), 0, expected, 0, n);
                Quantization.dequantize(t.type(), t.data(), 0, actual, 0, n);
                double err = 0, norm = 0;
                for (int i = 0; i < n; i++) {
                    err += (actual[i] - expected[i]) * (actual[i] - expected[i]);
                    norm += expected[i] * expected[i];
                }
                assertTrue(Math.sqrt(err / norm) < maxRelativeRmsError, p.name() + ": relative RMS error " + Math.sqrt(err / norm));
            }
        }
    }
}
