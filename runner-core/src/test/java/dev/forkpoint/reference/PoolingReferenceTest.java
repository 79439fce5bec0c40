package dev.forkpoint.reference;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.model.Pooling;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Hugging Face folder's sentence-transformers pooling ({@code modules.json} → {@code 1_Pooling/config.json}) on
 * stories260K converted without quantisation: mean and cls pooling against the float64 reference's hidden states
 * (bound 1e-4 per component, as for last-token pooling), a mode Forkpoint does not compute refused by name, no
 * Pooling module → the last token.
 */
class PoolingReferenceTest {
    private static ReferenceTransformer reference;

    @BeforeAll
    static void load() throws IOException {
        try (GgufFile file = GgufFile.open(StoriesReference.model())) {
            reference = ReferenceTransformer.load(file);
        }
    }

    private static Path folder(Path dir, String poolingMode) throws IOException {
        Path folder = dir.resolve("stories-st");
        ModelConverter.toMlx(StoriesReference.model(), folder, MlxOptions.defaults().unquantised(), (a, b) -> {});
        if (poolingMode != null) {
            Files.writeString(folder.resolve("modules.json"), """
                    [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                     {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                     {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
                    """);
            Files.createDirectories(folder.resolve("1_Pooling"));
            Files.writeString(folder.resolve("1_Pooling/config.json"), """
                    {"word_embedding_dimension": 64, "pooling_mode_cls_token": %s, "pooling_mode_mean_tokens": %s,
                     "pooling_mode_max_tokens": %s, "pooling_mode_lasttoken": %s}
                    """.formatted(poolingMode.equals("cls"), poolingMode.equals("mean"), poolingMode.equals("max"), poolingMode.equals("last")));
        }
        return folder;
    }

    private static double maxDiff(float[] actual, double[] expected) {
        assertEquals(expected.length, actual.length);
        double max = 0;
        for (int i = 0; i < expected.length; i++) max = Math.max(max, Math.abs(actual[i] - expected[i]));
        return max;
    }

    private static int[] tokens(LoadedModel m) {
        return m.tokenizer().encode("Lily and Ben went to the park. The sun was warm.", true, true);
    }

    @Test
    void meanPoolingIsTheMeanOfEveryTokensHiddenState(@TempDir Path dir) throws IOException {
        try (LoadedModel m = LoadedModel.load(folder(dir, "mean"), 1, LoadProgress.NONE)) {
            assertEquals(Pooling.Kind.MEAN, m.pooling().kind(), m.pooling().source());
            int[] tokens = tokens(m);
            double[][] states = reference.hiddenStates(tokens);
            double[] mean = new double[64];
            for (double[] s : states) for (int i = 0; i < 64; i++) mean[i] += s[i] / tokens.length;
            assertTrue(maxDiff(m.embed(tokens, 512), mean) < 1e-4);
            assertTrue(maxDiff(m.embed(tokens, 5), mean) < 1e-4, "in chunks of 5");
        }
    }

    @Test
    void clsPoolingIsTheFirstTokensHiddenState(@TempDir Path dir) throws IOException {
        try (LoadedModel m = LoadedModel.load(folder(dir, "cls"), 1, LoadProgress.NONE)) {
            assertEquals(Pooling.Kind.CLS, m.pooling().kind());
            int[] tokens = tokens(m);
            assertTrue(maxDiff(m.embed(tokens, 4), reference.hiddenStates(tokens)[0]) < 1e-4);
        }
    }

    @Test
    void lastTokenModeAndNoPoolingModuleGiveTheLastToken(@TempDir Path dir) throws IOException {
        for (String mode : new String[] {"last", null}) {
            Path sub = Files.createDirectories(dir.resolve(String.valueOf(mode)));
            Path f = folder(sub, mode);
            try (LoadedModel m = LoadedModel.load(f, 1, LoadProgress.NONE)) {
                assertEquals(Pooling.Kind.LAST, m.pooling().kind());
                int[] tokens = tokens(m);
                assertTrue(maxDiff(m.embed(tokens, 512), reference.hiddenStates(tokens)[tokens.length - 1]) < 1e-4);
            }
        }
    }

    @Test
    void aPoolingModeNotComputedIsRefusedByName(@TempDir Path dir) throws IOException {
        try (LoadedModel m = LoadedModel.load(folder(dir, "max"), 1, LoadProgress.NONE)) {
            assertEquals(Pooling.Kind.UNSUPPORTED, m.pooling().kind());
            var e = assertThrows(InvalidInputException.class, () -> m.embed(new int[] {1, 2}, 512));
            assertTrue(e.getMessage().contains("pooling_mode_max_tokens"), e.getMessage());
        }
    }
}
