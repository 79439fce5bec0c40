package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.fuzz.TinyLlama;
import dev.forkpoint.model.Pooling;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GGUF {@code <arch>.pooling_type} (llama.cpp's values) on the tiny Llama, checked against the same weights without
 * it (last-token pooling): in a causal model the last-token state of the first k+1 tokens is the state of position k,
 * so mean pooling must be the mean of those and cls pooling the state of the first token alone.
 */
class GgufPoolingTest {
    private static Path model(Path dir, Integer poolingType) throws IOException {
        TinyLlama tiny = new TinyLlama();
        if (poolingType != null) tiny.metadata.put("llama.pooling_type", MetadataValue.ofU32(poolingType));
        Path file = dir.resolve("tiny-" + poolingType + ".gguf");
        tiny.write(file, 1);
        return file;
    }

    private static final int[] TOKENS = {TinyLlama.BOS, 'H', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};

    @Test
    void meanClsAndLastPoolingFromTheMetadata(@TempDir Path dir) throws IOException {
        try (LoadedModel plain = LoadedModel.load(model(dir, null), 1, LoadProgress.NONE);
             LoadedModel mean = LoadedModel.load(model(dir, 1), 1, LoadProgress.NONE);
             LoadedModel cls = LoadedModel.load(model(dir, 2), 1, LoadProgress.NONE);
             LoadedModel last = LoadedModel.load(model(dir, 3), 1, LoadProgress.NONE);
             LoadedModel none = LoadedModel.load(model(dir, 0), 1, LoadProgress.NONE)) {
            assertEquals(Pooling.Kind.LAST, plain.pooling().kind());
            assertEquals(Pooling.Kind.MEAN, mean.pooling().kind());
            assertEquals(Pooling.Kind.CLS, cls.pooling().kind());
            assertEquals(Pooling.Kind.LAST, last.pooling().kind());
            assertEquals(Pooling.Kind.LAST, none.pooling().kind());
            assertTrue(mean.pooling().source().contains("llama.pooling_type = 1"), mean.pooling().source());
            int dim = TinyLlama.DIM;
            double[] expectedMean = new double[dim];
            for (int k = 1; k <= TOKENS.length; k++) {
                float[] state = plain.embed(Arrays.copyOf(TOKENS, k), 512);
                for (int i = 0; i < dim; i++) expectedMean[i] += state[i] / (double) TOKENS.length;
            }
            float[] pooled = mean.embed(TOKENS, 512);
            for (int i = 0; i < dim; i++) assertEquals(expectedMean[i], pooled[i], 1e-5, "mean component " + i);
            float[] first = plain.embed(new int[] {TOKENS[0]}, 512);
            float[] clsVector = cls.embed(TOKENS, 512);
            for (int i = 0; i < dim; i++) assertEquals(first[i], clsVector[i], 1e-5, "cls component " + i);
            assertArrayEquals(plain.embed(TOKENS, 512), last.embed(TOKENS, 512));
        }
    }

    @Test
    void rankPoolingIsRefusedByNameAndAnUnknownTypeIsAFormatError(@TempDir Path dir) throws IOException {
        try (LoadedModel rank = LoadedModel.load(model(dir, 4), 1, LoadProgress.NONE)) {
            assertEquals(Pooling.Kind.UNSUPPORTED, rank.pooling().kind());
            var e = assertThrows(InvalidInputException.class, () -> rank.embed(TOKENS, 512));
            assertTrue(e.getMessage().contains("rank"), e.getMessage());
        }
        Path bad = model(dir, 9);
        var e = assertThrows(ModelFormatException.class, () -> LoadedModel.load(bad, 1, LoadProgress.NONE));
        assertTrue(e.getMessage().contains("llama.pooling_type"), e.getMessage());
    }
}
