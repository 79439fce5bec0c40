package dev.forkpoint.cli;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** Runs the CLI in-process with captured streams and a controlled environment. */
final class CliHarness {
    /** What one invocation did. */
    record Result(int exitCode, String out, String err) {
        @Override
        public String toString() { return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err; }
    }

    private final Map<String, String> env = new HashMap<>();
    private byte[] stdin = new byte[0];

    /** An environment whose Ollama store and cache live under {@code root}, so tests never touch the user's. */
    CliHarness(Path root) {
        env.put("HOME", root.resolve("home").toString());
        env.put("OLLAMA_MODELS", root.resolve("ollama").toString());
        env.put("XDG_CACHE_HOME", root.resolve("cache").toString());
    }

    CliHarness with(String key, String value) {
        env.put(key, value);
        return this;
    }

    CliHarness stdin(String text) {
        stdin = text.getBytes(StandardCharsets.UTF_8);
        return this;
    }

    Result run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        var environment = new CliEnvironment(new ByteArrayInputStream(stdin),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
                Map.copyOf(env), false);
        int code = Main.commandLine(environment).execute(args);
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
