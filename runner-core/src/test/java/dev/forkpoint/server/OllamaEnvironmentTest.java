package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.kvcache.KvElementType;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Ollama's server variables read as Ollama reads them; bad values refused naming the variable and the value. */
class OllamaEnvironmentTest {
    @Test
    void unsetVariablesAreNullAndNothingIsUnsupported() {
        OllamaEnvironment e = OllamaEnvironment.from(Map.of("HOME", "/h", "OLLAMA_DEBUG", "  "));
        assertNull(e.host());
        assertNull(e.contextLength());
        assertNull(e.keepAlive());
        assertNull(e.kvCacheType());
        assertEquals(List.of(), e.unsupported(), "a blank variable is unset, as in Ollama");
        assertNull(e.unsupportedNote());
    }

    @Test
    void everySupportedVariableIsRead() {
        OllamaEnvironment e = OllamaEnvironment.from(Map.of("OLLAMA_HOST", "0.0.0.0:8080", "OLLAMA_CONTEXT_LENGTH", "\"32768\"",
                "OLLAMA_NUM_PARALLEL", "3", "OLLAMA_MAX_QUEUE", "10", "OLLAMA_KEEP_ALIVE", "1h", "OLLAMA_KV_CACHE_TYPE", "F16",
                "OLLAMA_MODELS", "/models", "OLLAMA_ORIGINS", "https://a.example", "OLLAMA_MAX_LOADED_MODELS", "2"));
        assertEquals(new OllamaHost("http", "0.0.0.0", 8080), e.host());
        assertEquals(32768, e.contextLength(), "quotes around a value are dropped, as Ollama's envconfig.Var does");
        assertEquals(3, e.numParallel());
        assertEquals(10, e.maxQueue());
        assertEquals(Duration.ofHours(1), e.keepAlive());
        assertEquals(KvElementType.F16, e.kvCacheType());
        assertEquals("/models", e.models());
        assertEquals("https://a.example", e.origins());
        assertEquals(2, e.maxLoadedModels());
        assertEquals(List.of(), e.unsupported());
    }

    @Test
    void setUnsupportedVariablesAreNamedInOneLine() {
        OllamaEnvironment e = OllamaEnvironment.from(Map.of("OLLAMA_FLASH_ATTENTION", "1", "OLLAMA_DEBUG", "1",
                "OLLAMA_CONTEXT_LENGTH", "8192", "OLLAMAX", "1"));
        assertEquals(List.of("OLLAMA_DEBUG", "OLLAMA_FLASH_ATTENTION"), e.unsupported());
        assertEquals("note: not supported by Forkpoint, ignored: OLLAMA_DEBUG, OLLAMA_FLASH_ATTENTION (supported: "
                + String.join(", ", OllamaEnvironment.SUPPORTED) + ")", e.unsupportedNote());
    }

    @Test
    void hostIsParsedAsOllamaParsesIt() {
        assertEquals(new OllamaHost("http", "127.0.0.1", 11434), OllamaHost.parse(""));
        assertEquals(new OllamaHost("http", "0.0.0.0", 11434), OllamaHost.parse("0.0.0.0"));
        assertEquals(new OllamaHost("http", "example.com", 11434), OllamaHost.parse("example.com"));
        assertEquals(new OllamaHost("http", "0.0.0.0", 8080), OllamaHost.parse(":8080"));
        assertEquals(new OllamaHost("http", "10.0.0.1", 9000), OllamaHost.parse(" '10.0.0.1:9000' "));
        assertEquals(new OllamaHost("http", "localhost", 80), OllamaHost.parse("http://localhost"));
        assertEquals(new OllamaHost("https", "localhost", 443), OllamaHost.parse("https://localhost/"));
        assertEquals(new OllamaHost("http", "localhost", 1234), OllamaHost.parse("HTTP://localhost:1234/ollama"));
        assertEquals(new OllamaHost("http", "::1", 11434), OllamaHost.parse("[::1]"));
        assertEquals(new OllamaHost("http", "::1", 8000), OllamaHost.parse("[::1]:8000"));
        assertEquals(new OllamaHost("http", "fe80::1", 11434), OllamaHost.parse("fe80::1"));
    }

    @Test
    void badHostsAreRefusedNamingTheVariableAndValue() {
        for (String bad : List.of("localhost:http", "localhost:70000", "ftp://localhost", "[::1", "[::1]x")) {
            var e = assertThrows(InvalidInputException.class, () -> OllamaEnvironment.from(Map.of("OLLAMA_HOST", bad)), bad);
            assertEquals(true, e.getMessage().startsWith("OLLAMA_HOST must be [http://|https://]host[:port], got '" + bad + "'"), e.getMessage());
        }
    }

    @Test
    void keepAliveTakesOllamasDurationSyntax() {
        assertEquals(Duration.ofMinutes(5), keepAlive("5m"));
        assertEquals(Duration.ofMinutes(90), keepAlive("1h30m"));
        assertEquals(Duration.ofSeconds(300), keepAlive("300"));
        assertEquals(Duration.ofSeconds(-1), keepAlive("-1"));
        assertEquals(Duration.ofMillis(1500), keepAlive("1.5s"));
        assertEquals(Duration.ZERO, keepAlive("0"));
        var e = assertThrows(InvalidInputException.class, () -> keepAlive("5 minutes"));
        assertEquals("OLLAMA_KEEP_ALIVE must be seconds or a duration such as 5m, 1h30m or -1 (negative = forever), got '5 minutes'", e.getMessage());
    }

    private static Duration keepAlive(String v) {
        return OllamaEnvironment.from(Map.of("OLLAMA_KEEP_ALIVE", v)).keepAlive();
    }

    @Test
    void badNumbersAreRefusedNamingTheVariableAndValue() {
        assertEquals("OLLAMA_CONTEXT_LENGTH must be a whole number >= 0 (0 = Ollama's default 4096), got '32k'",
                refused("OLLAMA_CONTEXT_LENGTH", "32k"));
        assertEquals("OLLAMA_NUM_PARALLEL must be a whole number >= 0 (0 = the default), got '-2'", refused("OLLAMA_NUM_PARALLEL", "-2"));
        assertEquals("OLLAMA_MAX_QUEUE must be a whole number >= 0, got '99999999999'", refused("OLLAMA_MAX_QUEUE", "99999999999"));
        assertEquals("OLLAMA_MAX_LOADED_MODELS must be a whole number >= 0 (0 = no limit), got 'two'", refused("OLLAMA_MAX_LOADED_MODELS", "two"));
    }

    @Test
    void quantisedKvTypesAreAcceptedInAnyCaseAndOthersRefusedNamingTheSupportedOnes() {
        assertEquals(KvElementType.F32, OllamaEnvironment.from(Map.of("OLLAMA_KV_CACHE_TYPE", "f32")).kvCacheType());
        assertEquals(KvElementType.Q8_0, OllamaEnvironment.from(Map.of("OLLAMA_KV_CACHE_TYPE", "q8_0")).kvCacheType());
        assertEquals(KvElementType.Q8_0, OllamaEnvironment.from(Map.of("OLLAMA_KV_CACHE_TYPE", "Q8_0")).kvCacheType());
        assertEquals(KvElementType.Q4_0, OllamaEnvironment.from(Map.of("OLLAMA_KV_CACHE_TYPE", "Q4_0")).kvCacheType());
        assertEquals("OLLAMA_KV_CACHE_TYPE must be f16, q8_0 or q4_0 (or f32), got 'bf16'", refused("OLLAMA_KV_CACHE_TYPE", "bf16"));
        assertEquals("OLLAMA_KV_CACHE_TYPE must be f16, q8_0 or q4_0 (or f32), got 'q4_1'", refused("OLLAMA_KV_CACHE_TYPE", "q4_1"));
    }

    private static String refused(String name, String value) {
        return assertThrows(InvalidInputException.class, () -> OllamaEnvironment.from(Map.of(name, value))).getMessage();
    }
}
