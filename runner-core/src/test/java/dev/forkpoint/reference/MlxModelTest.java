package dev.forkpoint.reference;

import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * stories260K converted to MLX folders and loaded back through {@code LoadedModel.load(folder)}: the greedy output
 * against llama2.c's reference (F32 and 8-bit), 4-bit groups of 64 and 32 and a mixed configuration run, and a
 * broken folder is refused naming file and tensor.
 */
class MlxModelTest {
    @TempDir static Path dir;
    private static StoriesReference expected;

    @BeforeAll
    static void reference() throws IOException {
        expected = StoriesReference.load();
    }

    private static Path convert(String name, MlxOptions options) throws IOException {
        Path out = dir.resolve(name);
        if (!Files.exists(out)) ModelConverter.toMlx(StoriesReference.model(), out, options, (a, b) -> {});
        return out;
    }

    private static int[] greedy(Path model, int n) throws IOException {
        try (LoadedModel m = LoadedModel.load(model, 2, LoadProgress.NONE)) {
            GenerationResult r = m.generate(GenerationRequest.of(expected.prompt(), SamplingOptions.greedy().withNumPredict(n)), s -> {});
            assertEquals(expected.promptTokens().length, r.promptTokens(), "prompt tokens of " + model);
            return r.generatedIds();
        }
    }

    private static int agreeing(int[] a, int[] b) {
        int i = 0;
        while (i < a.length && i < b.length && a[i] == b[i]) i++;
        return i;
    }

    @Test
    void unquantisedFolderGeneratesLikeLlama2c() throws IOException {
        Path folder = convert("f32", MlxOptions.defaults().unquantised());
        int[] ids = greedy(folder, expected.generatedTokens().length);
        assertArrayEquals(expected.generatedTokens(), ids);
    }

    @Test
    void eightBitFolderFollowsTheF32ReferenceFor30Tokens() throws IOException {
        for (int group : new int[]{64, 32}) {
            Path folder = convert("q8g" + group, MlxOptions.defaults().withFormat(8, group));
            int[] ids = greedy(folder, 40);
            int same = agreeing(expected.generatedTokens(), ids);
            assertTrue(same >= 30, "8-bit group " + group + " agrees with the F32 reference for " + same + " tokens only");
        }
    }

    @Test
    void fourBitAndMixedFoldersLoadAndRun() throws IOException {
        for (var e : Map.of(
                "q4g64", MlxOptions.defaults(),
                "q4g32", MlxOptions.defaults().withFormat(4, 32),
                "mixed", MlxOptions.defaults().withEmbeddingBits(8).withKeepOutput(true)).entrySet()) {
            Path folder = convert(e.getKey(), e.getValue());
            try (LoadedModel m = LoadedModel.load(folder, 2, LoadProgress.NONE)) {
                Map<String, Integer> types = m.info().tensorTypes();
                assertTrue(types.keySet().stream().anyMatch(t -> t.startsWith("affine 4-bit")), e.getKey() + ": " + types);
                if (e.getKey().equals("mixed")) {
                    assertTrue(types.keySet().stream().anyMatch(t -> t.startsWith("affine 8-bit")), "mixed: " + types);
                }
                float[] logits = m.logits(expected.promptTokens());
                assertEquals(512, logits.length);
                // 4 bits of a 260K-parameter model move the logits, but the reference's favourite stays near the top.
                int[] top = ReferenceLogits.topIds(logits, 5);
                assertTrue(java.util.Arrays.stream(top).anyMatch(id -> id == expected.top5Ids()[0]),
                        e.getKey() + ": reference top token " + expected.top5Ids()[0] + " not in " + java.util.Arrays.toString(top));
                GenerationResult r = m.generate(GenerationRequest.of(expected.prompt(), SamplingOptions.greedy().withNumPredict(20)), s -> {});
                assertEquals(20, r.generatedIds().length, e.getKey());
            }
        }
    }

    @Test
    void brokenFoldersNameFileAndTensor() throws IOException {
        Path good = convert("q8g64", MlxOptions.defaults().withFormat(8, 64));
        Path bad = dir.resolve("bad-shape");
        copy(good, bad);
        Path config = bad.resolve("config.json");
        Files.writeString(config, Files.readString(config).replaceFirst("\"intermediate_size\"\\s*:\\s*\\d+", "\"intermediate_size\": 96"));
        var e = assertThrows(ModelFormatException.class, () -> LoadedModel.load(bad, 1, LoadProgress.NONE).close());
        assertTrue(e.getMessage().contains("ffn_") && e.getMessage().contains(bad.toString()), e.getMessage());

        Path mode = dir.resolve("bad-mode");
        copy(good, mode);
        Path c2 = mode.resolve("config.json");
        Files.writeString(c2, Files.readString(c2).replaceAll("\"mode\"\\s*:\\s*\"affine\"", "\"mode\": \"mxfp4\""));
        var m = assertThrows(ModelFormatException.class, () -> LoadedModel.load(mode, 1, LoadProgress.NONE).close());
        assertTrue(m.getMessage().contains("mxfp4") && m.getMessage().contains("affine"), m.getMessage());

        Path noConfig = dir.resolve("no-config");
        copy(good, noConfig);
        Files.delete(noConfig.resolve("config.json"));
        var c = assertThrows(dev.forkpoint.InvalidInputException.class, () -> LoadedModel.load(noConfig, 1, LoadProgress.NONE).close());
        assertTrue(c.getMessage().contains("config.json"), c.getMessage());
    }

    static void copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (var s = Files.list(from)) {
            for (Path p : s.toList()) Files.copy(p, to.resolve(p.getFileName()));
        }
    }
}
