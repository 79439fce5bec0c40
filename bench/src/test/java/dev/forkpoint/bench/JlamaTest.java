package dev.forkpoint.bench;

import com.github.tjake.jlama.model.llama.LlamaTokenizer;
import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** Jlama in {@code bench compare}: which GGUFs it runs as they are, and greedy agreement with Forkpoint on the same folder. */
class JlamaTest {
    @TempDir
    Path dir;

    @Test
    void floatWeightsRunAsTheyAreAndQuantisedOnesOnlyWhenAskedAndLabelled() throws Exception {
        Path f16 = new SyntheticModelWriter(ModelShape.TINY, FileType.F16, 7, false, 2).write(dir.resolve("f16.gguf")).path();
        Path q4 = new SyntheticModelWriter(ModelShape.TINY, FileType.Q4_0, 7, false, 2).write(dir.resolve("q4.gguf")).path();

        Jlama same = Jlama.plan(f16, null);
        assertTrue(same.measured() && same.sameWeights());
        assertEquals("jlama", same.engineName());
        assertNull(same.exportFloatType(), "F16 stays F16");
        assertTrue(Jlama.plan(f16, "f16").sameWeights(), "f16 of an F16 file is the file's own weights");

        Jlama refused = Jlama.plan(q4, null);
        assertFalse(refused.measured());
        assertTrue(refused.reason().contains("Q4_0") && refused.reason().contains("--jlama-requantize"), refused.reason());

        Jlama requantised = Jlama.plan(q4, "q4");
        assertTrue(requantised.measured());
        assertFalse(requantised.sameWeights());
        assertEquals("Q4", requantised.weights());
        assertTrue(requantised.engineName().contains("re-quantised from") && requantised.engineName().contains("Q4_0")
                && requantised.engineName().contains("not the same weights"), requantised.engineName());
        assertTrue(requantised.rowNote(null).startsWith("NOT the same weights"));

        var e = assertThrows(dev.forkpoint.InvalidInputException.class, () -> Jlama.plan(q4, "i8"));
        assertTrue(e.getMessage().contains("--jlama-requantize i8"), e.getMessage());
    }

    @Test
    void ropeScalingOtherThanLinearIsNotedBecauseJlamaIgnoresIt() throws Exception {
        Path folder = java.nio.file.Files.createDirectories(dir.resolve("cfg"));
        java.nio.file.Files.writeString(folder.resolve("config.json"),
                "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 32.0, \"low_freq_factor\": 1.0}}");
        String note = Jlama.ropeScalingNote(folder);
        assertNotNull(note);
        assertTrue(note.contains("'llama3'"), note);
        java.nio.file.Files.writeString(folder.resolve("config.json"), "{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}");
        assertNull(Jlama.ropeScalingNote(folder));
        java.nio.file.Files.writeString(folder.resolve("config.json"), "{\"rope_scaling\": null}");
        assertNull(Jlama.ropeScalingNote(folder));
    }

    /** Without llama.cpp, prompt token counts are still compared (with the first measured engine's). */
    @Test
    void promptTokenCountsAreComparedWithoutLlamaCpp() {
        var a = CompareReport.EngineReport.measured("forkpoint", 1, 1, 15, List.of(new EngineRun(16, 1_000_000, 4, 1_000_000, 3_000_000, "engine")));
        var b = CompareReport.EngineReport.measured("jlama", 1, 1, 15, List.of(new EngineRun(16, 1_000_000, 4, 1_000_000, 3_000_000, "callbacks")));
        var c = CompareReport.EngineReport.measured("jlama", 1, 1, 17, List.of(new EngineRun(18, 1_000_000, 4, 1_000_000, 3_000_000, "callbacks")));
        assertTrue(CompareReport.ThreadsResult.of(1, List.of(a, b)).promptTokensEqual());
        var unequal = CompareReport.ThreadsResult.of(1, List.of(a, c));
        assertFalse(unequal.promptTokensEqual());
        assertTrue(unequal.ratios().isEmpty(), "no ratios without llama.cpp");
    }

    /**
     * Forkpoint and Jlama on the same exported folder pick the same greedy tokens: each of Forkpoint's token ids, as
     * Jlama's own tokenizer spells it, is what Jlama streamed at that step.
     */
    @Test
    void jlamaAndForkpointAgreeOnGreedyTokensOnTheSameFolder() throws Exception {
        Path gguf = new SyntheticModelWriter(ModelShape.TINY, FileType.F16, 42, false, 2).write(dir.resolve("tiny.gguf")).path();
        Path folder = dir.resolve("hf");
        ModelConverter.toMlx(gguf, folder, MlxOptions.defaults().unquantised(), (a, b) -> {});
        String prompt = PromptText.of(24, 5);
        int n = 12;

        int[] forkpointIds;
        try (LoadedModel model = LoadedModel.load(folder, 1, LoadProgress.NONE)) {
            GenerationResult r = model.generate(new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(n), 256, 256), piece -> {});
            forkpointIds = r.generatedIds();
        }
        assertEquals(n, forkpointIds.length, "the synthetic model should not pick EOS within " + n + " tokens");

        EngineRun run;
        List<String> pieces;
        try (JlamaEngine jlama = JlamaEngine.start("jlama", folder, 1, JlamaWorker.AS_IS, false)) {
            assertEquals(24, jlama.countTokens(prompt));
            run = jlama.run(prompt, n);
            pieces = jlama.lastPieces();
        }
        assertEquals(25, run.promptTokens(), "BOS + 24 one-character tokens");
        assertEquals(n, run.generatedTokens());

        var tokenizer = new LlamaTokenizer(folder);
        List<String> expected = new ArrayList<>();
        for (int id : forkpointIds) expected.add(tokenizer.decode(id));
        assertEquals(expected, pieces);
    }
}
