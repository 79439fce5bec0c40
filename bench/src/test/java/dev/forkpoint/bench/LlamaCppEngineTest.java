package dev.forkpoint.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** llama.cpp (de.kherud:llama, bundled natives, offline) loads and runs a generated file, through the child process. */
class LlamaCppEngineTest {
    @TempDir
    Path dir;

    @Test
    void llamaCppLoadsTheTinyFileAndCountsOneTokenPerCharacter() throws Exception {
        Path model = new SyntheticModelWriter(ModelShape.TINY, FileType.F16, 42, true, 2).write(dir.resolve("tiny.gguf")).path();
        try (var engine = LlamaCppEngine.start(model, 1, 256, 64, false)) {
            assertTrue(engine.residentKbAfterLoad() != 0);
            assertEquals(11, engine.countTokens("hello world"));
            String prompt = PromptText.of(31, 5);
            assertEquals(31, engine.countTokens(prompt));
            EngineRun run = engine.run(prompt, 8);
            assertEquals("engine", run.timingSource());
            assertEquals(32, run.promptTokens(), "BOS + one token per character");
            assertEquals(8, run.generatedTokens());
            assertTrue(run.promptNanos() > 0 && run.decodeNanos() > 0);
        }
    }
}
