package dev.forkpoint.cli;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.server.ServerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code forkpoint serve} honours Ollama's server variables; a flag given on the command line wins over its variable;
 * set OLLAMA_* variables Forkpoint does not read are named once; bad values end it before it listens (exit 2).
 */
class ServeEnvironmentTest {
    @TempDir
    Path root;

    private Map<String, String> env(String... pairs) {
        Map<String, String> env = new HashMap<>(Map.of("HOME", root.resolve("home").toString(),
                "OLLAMA_MODELS", root.resolve("ollama").toString(), "XDG_CACHE_HOME", root.resolve("cache").toString()));
        for (int i = 0; i < pairs.length; i += 2) env.put(pairs[i], pairs[i + 1]);
        return env;
    }

    private static final String[] ALL = {"OLLAMA_HOST", "0.0.0.0:9999", "OLLAMA_CONTEXT_LENGTH", "32768", "OLLAMA_NUM_PARALLEL", "3",
            "OLLAMA_MAX_QUEUE", "7", "OLLAMA_KEEP_ALIVE", "1h", "OLLAMA_KV_CACHE_TYPE", "f16", "OLLAMA_MAX_LOADED_MODELS", "2",
            "OLLAMA_ORIGINS", "https://app.example"};

    @Test
    void withoutFlagsOrVariablesTheDefaultsHold() {
        ServerConfig c = ServeArgs.parse(env()).config();
        assertEquals(ServerConfig.DEFAULT_HOST, c.host());
        assertEquals(ServerConfig.DEFAULT_PORT, c.port());
        assertEquals(0, c.engine().numCtx(), "0 = Ollama's 4096 (clamped per model)");
        assertEquals(ServeCommand.DEFAULT_PARALLEL, c.parallel());
        assertEquals(ServeCommand.DEFAULT_PARALLEL + 1, c.engine().sequences());
        assertEquals(ServeCommand.DEFAULT_QUEUE_LIMIT, c.queueLimit());
        assertEquals(Duration.ofMinutes(5), c.keepAlive());
        assertEquals(KvElementType.F32, c.engine().kvType());
        assertEquals(0, c.maxLoadedModels());
    }

    @Test
    void theVariablesSetWhatNoFlagSets() {
        ServeArgs s = ServeArgs.parse(env(ALL));
        ServerConfig c = s.config();
        assertEquals("0.0.0.0", c.host());
        assertEquals(9999, c.port());
        assertEquals(32768, c.engine().numCtx());
        assertEquals(3, c.parallel());
        assertEquals(4, c.engine().sequences(), "the derived KV budget holds parallel + 1 sequences");
        assertEquals(7, c.queueLimit());
        assertEquals(Duration.ofHours(1), c.keepAlive());
        assertEquals(KvElementType.F16, c.engine().kvType());
        assertEquals(2, c.maxLoadedModels());
        assertTrue(c.guards().allowedOrigins().contains("https://app.example"), c.guards().allowedOrigins().toString());
        assertEquals("", s.err(), "every variable is supported: nothing to name");
    }

    @Test
    void flagsWinOverVariables() {
        ServerConfig c = ServeArgs.parse(env(ALL), "--host", "127.0.0.2", "--port", "0", "--num-ctx", "8192", "--parallel", "1",
                "--queue-limit", "9", "--keep-alive", "-1", "--kv-type", "f32", "--max-loaded-models", "1", "--origins", "https://b.example").config();
        assertEquals("127.0.0.2", c.host());
        assertEquals(0, c.port());
        assertEquals(8192, c.engine().numCtx());
        assertEquals(1, c.parallel());
        assertEquals(2, c.engine().sequences());
        assertEquals(9, c.queueLimit());
        assertTrue(c.keepAlive().isNegative());
        assertEquals(KvElementType.F32, c.engine().kvType());
        assertEquals(1, c.maxLoadedModels());
        assertTrue(c.guards().allowedOrigins().containsAll(List.of("https://app.example", "https://b.example")),
                "--origins adds to OLLAMA_ORIGINS: " + c.guards().allowedOrigins());
    }

    @Test
    void aFlagGivenWithItsDefaultValueStillWins() {
        ServerConfig c = ServeArgs.parse(env(ALL), "--port", "11434", "--parallel", "4").config();
        assertEquals("0.0.0.0", c.host(), "OLLAMA_HOST still gives the host");
        assertEquals(11434, c.port());
        assertEquals(4, c.parallel());
    }

    @Test
    void keepAliveFlagTakesOllamasDurations() {
        assertEquals(Duration.ofMinutes(90), ServeArgs.parse(env(), "--keep-alive", "1h30m").config().keepAlive());
        assertEquals(Duration.ofSeconds(30), ServeArgs.parse(env(), "--keep-alive", "30").config().keepAlive());
        var e = assertThrows(InvalidInputException.class, () -> ServeArgs.parse(env(), "--keep-alive", "soon"));
        assertEquals("--keep-alive must be seconds or a duration such as 5m or 1h30m (negative = forever), got 'soon'", e.getMessage());
    }

    @Test
    void stepMsSetsTheSchedulersTimeBound() {
        assertEquals(0, ServeArgs.parse(env()).config().schedulerOptions().stepMillis(), "0: four decode passes");
        var s = ServeArgs.parse(env(ALL), "--step-ms", "150").config().schedulerOptions();
        assertEquals(150, s.stepMillis());
        assertEquals(3, s.parallel(), "OLLAMA_NUM_PARALLEL reaches the scheduler too");
        assertEquals(7, s.queueLimit());
        assertEquals(-1, ServeArgs.parse(env(), "--step-ms", "-1").config().schedulerOptions().stepMillis());
        var e = assertThrows(InvalidInputException.class, () -> ServeArgs.parse(env(), "--step-ms", "-2"));
        assertEquals("--step-ms must be >= 0 (0: automatic) or -1 (no time bound), got -2", e.getMessage());
    }

    @Test
    void unsupportedVariablesAreNamedOnceAtStartUp() {
        ServeArgs s = ServeArgs.parse(env("OLLAMA_FLASH_ATTENTION", "1", "OLLAMA_SCHED_SPREAD", "true", "OLLAMA_CONTEXT_LENGTH", "8192"));
        String[] lines = s.err().split("\n");
        assertEquals(1, lines.length, s.err());
        assertTrue(lines[0].startsWith("note: not supported by Forkpoint, ignored: OLLAMA_FLASH_ATTENTION, OLLAMA_SCHED_SPREAD (supported: OLLAMA_HOST, "), lines[0]);
        assertFalse(lines[0].contains("ignored: OLLAMA_CONTEXT_LENGTH"));
        assertEquals(8192, s.config().engine().numCtx());
    }

    @Test
    void badValuesEndServeBeforeItListensNamingTheVariableAndValue() {
        record Case(String name, String value, String message) {}
        for (Case c : List.of(
                new Case("OLLAMA_NUM_PARALLEL", "many", "OLLAMA_NUM_PARALLEL must be a whole number >= 0 (0 = the default), got 'many'"),
                new Case("OLLAMA_HOST", "localhost:99999", "OLLAMA_HOST must be [http://|https://]host[:port], got 'localhost:99999'"),
                new Case("OLLAMA_KV_CACHE_TYPE", "q5_1", "OLLAMA_KV_CACHE_TYPE must be f16, q8_0 or q4_0 (or f32), got 'q5_1'"),
                new Case("OLLAMA_KEEP_ALIVE", "forever", "OLLAMA_KEEP_ALIVE must be seconds or a duration such as 5m, 1h30m or -1"))) {
            var h = new CliHarness(root);
            h.with(c.name(), c.value());
            CliHarness.Result r = h.run("serve", "--port", "0");
            assertEquals(ExitCodes.BAD_INPUT, r.exitCode(), r.toString());
            assertTrue(r.err().contains(c.message()), r.toString());
            assertFalse(r.out().contains("listening"), r.toString());
        }
    }

    @Test
    void quantisedKvTypesComeFromTheVariableOrTheFlagInAnyCase() {
        assertEquals(KvElementType.Q8_0, ServeArgs.parse(env("OLLAMA_KV_CACHE_TYPE", "q8_0")).config().engine().kvType());
        assertEquals(KvElementType.Q4_0, ServeArgs.parse(env("OLLAMA_KV_CACHE_TYPE", "f16"), "--kv-type", "Q4_0").config().engine().kvType());
        var e = assertThrows(InvalidInputException.class, () -> ServeArgs.parse(env(), "--kv-type", "q2_k"));
        assertEquals("kv_type must be f32, f16, q8_0 or q4_0, got 'q2_k'", e.getMessage());
    }

    @Test
    void aBadValueOfAVariableIsRefusedEvenWhenItsFlagWins() {
        var h = new CliHarness(root).with("OLLAMA_CONTEXT_LENGTH", "-5");
        CliHarness.Result r = h.run("serve", "--port", "0", "--num-ctx", "2048");
        assertEquals(ExitCodes.BAD_INPUT, r.exitCode(), r.toString());
        assertTrue(r.err().contains("OLLAMA_CONTEXT_LENGTH must be a whole number >= 0 (0 = Ollama's default 4096), got '-5'"), r.toString());
    }
}
