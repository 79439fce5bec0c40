package dev.forkpoint.server;

import dev.forkpoint.server.anthropic.AnthropicApi;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.server.openai.OpenAiApi;
import dev.forkpoint.server.runner.RunnerApi;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The official JavaScript clients (npm: ollama, openai, @anthropic-ai/sdk, pinned in src/test/js/package.json) against a
 * live server: {@code src/test/js/clients.mjs} cross-checks the three APIs (greedy text equal across APIs and between
 * streamed and not, usage consistent, embeddings equal between the ollama and openai clients, errors in each API's
 * shape), and each client's view of thinking on a second model (stories260K with Qwen3's template, its replies scripted
 * to one thinking block and an answer). {@code ./forkpoint test} installs the clients with {@code npm ci}; without
 * Node.js the test is skipped, saying why.
 */
class JsClientLibrariesTest {
    static final Path JS = Path.of("src/test/js").toAbsolutePath();

    @org.junit.jupiter.api.io.TempDir
    Path dir;

    @Test
    void officialClientsAgainstALiveServer() throws Exception {
        assumeTrue(onPath("node"), "Node.js is not installed: the JavaScript client tests are skipped");
        assumeTrue(Files.isDirectory(JS.resolve("node_modules/openai")),
                "the JavaScript clients are not installed: run ./forkpoint test (or npm ci in " + JS + ")");
        var config = ServerHarness.config();
        var model = dev.forkpoint.TestData.shared("models/stories260K.gguf");
        Path thinking = TemplateModel.write(dir, ThinkingTest.FILE, TemplateModel.qwen3Template(), 4096);
        try (ForkpointServer server = ForkpointServer.start(config.withModels(List.of(model.toString(), thinking.toString())),
                List.of(new OllamaApi(), new RunnerApi(), new OpenAiApi(), new AnthropicApi()))) {
            ServedModel thinker = server.models().loaded().stream().filter(m -> m.name().equals(ThinkingTest.FILE)).findFirst()
                    .orElseThrow(() -> new AssertionError("not loaded: " + ThinkingTest.FILE + " in " + server.models().loaded()));
            dev.forkpoint.engine.EngineProbe.install(thinker.model()).scriptRepeating(
                    ThinkingTest.scriptIds(thinker.model().tokenizer(), ThinkingTest.REPLY));
            node("clients.mjs", server.address(), ServerHarness.MODEL, ThinkingTest.FILE, ThinkingTest.THINKING, ThinkingTest.ANSWER);
        }
    }

    /** {@code src/test/js/store.mjs}: the ollama client's create, list, copy and delete on an empty temporary store. */
    @Test
    void ollamaClientManagesATemporaryStore() throws Exception {
        assumeTrue(onPath("node"), "Node.js is not installed: the JavaScript client tests are skipped");
        assumeTrue(Files.isDirectory(JS.resolve("node_modules/ollama")),
                "the JavaScript clients are not installed: run ./forkpoint test (or npm ci in " + JS + ")");
        var model = dev.forkpoint.TestData.shared("models/stories260K.gguf");
        var config = ServerHarness.config().withEnv(java.util.Map.of("HOME", dir.toString(),
                "OLLAMA_MODELS", dir.resolve("models").toString()));
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi()))) {
            node("store.mjs", server.address(), model.toAbsolutePath().toString());
        }
    }

    /** Runs {@code node SCRIPT ARGS} in src/test/js; fails with its output when it reports failures or takes over 120 s. */
    private static void node(String script, String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of("node", script));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).directory(JS.toFile()).redirectErrorStream(true).start();
        String out;
        try (var in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(script + " did not finish in 120 s:\n" + out);
        }
        System.out.print(out);
        assertEquals(0, p.exitValue(), script + " reported failures:\n" + out);
    }

    private static boolean onPath(String command) {
        try {
            Process p = new ProcessBuilder(command, "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }
}
