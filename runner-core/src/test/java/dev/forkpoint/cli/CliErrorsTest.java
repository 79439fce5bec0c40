package dev.forkpoint.cli;

import dev.forkpoint.TestData;
import dev.forkpoint.store.FakeOllamaStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Exit codes and messages for bad input: 2, one line naming the problem, no stack trace unless --debug. */
class CliErrorsTest {
    @TempDir
    Path tmp;

    private CliHarness cli() { return new CliHarness(tmp); }

    private static void assertBadInput(CliHarness.Result r, String... mentions) {
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().startsWith("forkpoint: error: "), r::toString);
        for (String m : mentions) assertTrue(r.err().contains(m), () -> "expected '" + m + "' in\n" + r);
        assertFalse(r.err().contains("\tat "), () -> "no stack trace without --debug:\n" + r);
        assertEquals("", r.out(), r::toString);
    }

    @Test
    void unknownOptionIsBadInput() {
        assertBadInput(cli().run("run", "--prompt", "x", "--bogus"), "--bogus");
    }

    @Test
    void unknownCommandIsBadInput() {
        assertEquals(2, cli().run("frobnicate").exitCode());
    }

    @Test
    void missingPromptIsBadInput() {
        assertBadInput(cli().run("run"), "--prompt");
    }

    @Test
    void badNumberIsBadInput() {
        assertBadInput(cli().run("run", "--prompt", "x", "--top-k", "many"), "--top-k", "many");
    }

    @Test
    void badBackendIsBadInputBeforeTheModelIsTouched() {
        assertBadInput(cli().run("run", "--prompt", "x", "--backend", "gpu"), "--backend must be cpu, mlx or auto", "'gpu'");
        assertBadInput(cli().run("run", "--prompt", "x", "--backend", "mlx"), "--backend mlx: ", "MLX backend", "use --backend cpu or auto");
        assertBadInput(cli().run("serve", "--backend", "mlx"), "--backend mlx: ");
        assertBadInput(cli().run("serve", "--backend", "tpu"), "--backend must be cpu, mlx or auto", "'tpu'");
        assertFalse(Files.exists(tmp.resolve("cache")), "no demo model is generated for a refused --backend");
    }

    @Test
    void missingModelFileIsNamed() {
        assertBadInput(cli().run("run", "--model", "/nonexistent.gguf", "--prompt", "x"), "/nonexistent.gguf", "does not exist");
        assertBadInput(cli().run("show", "--model", "/nonexistent.gguf"), "/nonexistent.gguf");
        assertBadInput(cli().run("tokenize", "--model", "/nonexistent.gguf", "--text", "x"), "/nonexistent.gguf");
    }

    @Test
    void directoryAsModelIsNamed() {
        assertBadInput(cli().run("show", "--model", tmp + "/"), tmp.toString(), "has no config.json");
    }

    @Test
    void unknownOllamaNameListsTheStore() throws IOException {
        FakeOllamaStore.create(tmp.resolve("ollama")).addModel("library", "tiny", "latest", new byte[] {1, 2, 3});
        assertBadInput(cli().run("run", "--model", "qwen3:0.6b", "--prompt", "x"), "qwen3:0.6b", "tiny:latest",
                tmp.resolve("ollama").toString());
    }

    @Test
    void unknownOllamaNameWithoutStoreSaysWhereItLooked() {
        assertBadInput(cli().run("show", "--model", "llama3.2"), "llama3.2:latest", tmp.resolve("ollama").toString());
    }

    @Test
    void truncatedGgufIsNamed() throws IOException {
        byte[] full = Files.readAllBytes(TestData.shared("models/stories260K.gguf"));
        Path cut = tmp.resolve("cut.gguf");
        Files.write(cut, Arrays.copyOf(full, 1000));
        assertBadInput(cli().run("tokenize", "--model", cut.toString(), "--text", "x"), cut.toString());
        assertBadInput(cli().run("run", "--model", cut.toString(), "--prompt", "x"), cut.toString());
        assertBadInput(cli().run("show", "--model", cut.toString()), cut.toString());
    }

    @Test
    void notAGgufIsNamed() throws IOException {
        Path text = tmp.resolve("notes.gguf");
        Files.writeString(text, "hello, this is not a model\n");
        assertBadInput(cli().run("tokenize", "--model", text.toString(), "--text", "x"), text.toString(), "magic");
    }

    @Test
    void outOfRangeSamplingOptionIsNamed() {
        assertBadInput(cli().run("run", "--prompt", "x", "--top-p", "2"), "top_p");
        assertBadInput(cli().run("run", "--prompt", "x", "--temperature", "-1"), "temperature");
        assertBadInput(cli().run("run", "--prompt", "x", "--stop", ""), "stop");
    }

    @Test
    void outOfRangeRunOptionIsNamed() {
        assertBadInput(cli().run("run", "--prompt", "x", "--num-batch", "0"), "num_batch");
        assertBadInput(cli().run("run", "--prompt", "x", "--num-ctx", "-5"), "num_ctx");
        assertBadInput(cli().run("run", "--prompt", "x", "--threads", "0"), "threads");
        assertBadInput(cli().run("run", "--prompt", "x", "--kv-cache-bytes", "-1"), "kv_cache_bytes");
        assertBadInput(cli().run("run", "--prompt", "x", "--kv-type", "q4"), "kv_type");
        assertBadInput(cli().run("run", "--model", dev.forkpoint.TestData.shared("models/stories260K.gguf").toString(),
                "--prompt", "x", "--kv-cache-bytes", "1000"), "kv_cache_bytes 1000");
    }

    @Test
    void optionsAreCheckedBeforeTheModelIsTouched() {
        var r = cli().run("run", "--prompt", "x", "--top-p", "2");
        assertFalse(r.err().contains("note: no --model"), r::toString);
        assertFalse(Files.exists(tmp.resolve("cache")), "the demo model is not generated for a command that fails its options");
    }

    @Test
    void debugShowsTheStackTraceBeforeOrAfterTheCommand() {
        for (String[] args : new String[][] {
                {"--debug", "run", "--model", "/nonexistent.gguf", "--prompt", "x"},
                {"run", "--debug", "--model", "/nonexistent.gguf", "--prompt", "x"}}) {
            var r = cli().run(args);
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains("forkpoint: error: model file /nonexistent.gguf does not exist"), r::toString);
            assertTrue(r.err().contains("\tat dev.forkpoint."), () -> "stack trace expected with --debug:\n" + r);
        }
    }

    @Test
    void helpAndVersionSucceed() {
        var help = cli().run("--help");
        assertEquals(0, help.exitCode(), help::toString);
        for (String command : new String[] {"run", "show", "tokenize", "quantize"}) {
            assertTrue(help.out().contains(command), help::toString);
            var sub = cli().run(command, "--help");
            assertEquals(0, sub.exitCode(), sub::toString);
            assertTrue(sub.out().contains("Usage: forkpoint " + command), sub::toString);
        }
        assertTrue(cli().run("run", "--help").out().contains("--repeat-last-n"));
        assertEquals(0, cli().run("--version").exitCode());
    }

    @Test
    void noCommandPrintsUsageAndFails() {
        var r = cli().run();
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("Usage: forkpoint"), r::toString);
    }
}
