package dev.forkpoint.bench.probe;

import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The probe's small parts: cpuinfo parsing, Ollama's model-name matching, URL checking, the prompts. */
class ProbePartsTest {

    @Test
    void cpuModelIsTheFirstModelNameLine(@TempDir Path dir) throws Exception {
        Path cpuinfo = dir.resolve("cpuinfo");
        Files.writeString(cpuinfo, "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9R14\n\nprocessor\t: 1\nmodel name\t: other\n");
        assertEquals("AMD EPYC 9R14", ClientMachine.cpuModel(cpuinfo));
        Files.writeString(cpuinfo, "processor\t: 0\nBogoMIPS\t: 48.00\n");
        assertNull(ClientMachine.cpuModel(cpuinfo));
        assertNull(ClientMachine.cpuModel(dir.resolve("missing")));
    }

    @Test
    void modelNamesMatchAsOllamaMatchesThem() {
        assertTrue(OllamaClient.sameModel("llama3.2", "llama3.2:latest"));
        assertTrue(OllamaClient.sameModel("Stories260K", "stories260K.gguf"));
        assertFalse(OllamaClient.sameModel("qwen3:0.6b", "qwen3:latest"));
    }

    @Test
    void onlyHttpUrlsAreAccepted() {
        var e = assertThrows(InvalidInputException.class, () -> new OllamaClient("localhost:11434", Duration.ofSeconds(1)));
        assertTrue(e.getMessage().contains("localhost:11434"), e.getMessage());
        assertEquals("http://h:1", new OllamaClient("http://h:1/", Duration.ofSeconds(1)).url());
    }

    @Test
    void promptsShareTheirPrefixAndDifferInTheirTurn() {
        var p = new ProbePrompts("abc", 50, 10, 7);
        assertEquals(p.prefix(), new ProbePrompts("abc", 50, 10, 7).prefix());
        assertNotEquals(p.prefix(), new ProbePrompts("abd", 50, 10, 7).prefix());
        assertNotEquals(p.suffix(1), p.suffix(2));
        // words: "Session abc." + 50 words; "Request 1:" + 10 words
        assertEquals(2 + 50, p.prefix().split(" ").length);
        assertEquals(2 + 10, p.suffix(1).split(" ").length);
    }
}
