package dev.forkpoint.bench;

import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.*;

class SmallPartsTest {
    @Test
    void promptTextIsDeterministicOneByteAsciiOfTheRequestedLength() {
        String a = PromptText.of(511, 3);
        assertEquals(511, a.length());
        assertEquals(a, PromptText.of(511, 3));
        assertNotEquals(a, PromptText.of(511, 4));
        assertTrue(a.matches("[a-z][a-z ,.]*"), a);
        assertEquals(0, PromptText.of(0, 1).length());
    }

    @Test
    void parsesLlamaCppTimingLines() {
        var p = LlamaCppTimings.parse("prompt eval time =     812.40 ms /   512 tokens (    1.59 ms per token,   630.23 tokens per second)").orElseThrow();
        assertTrue(p.prompt());
        assertEquals(512, p.tokens());
        assertEquals(812_400_000L, p.nanos());
        var e = LlamaCppTimings.parse("       eval time =    6210.77 ms /   128 tokens (   48.52 ms per token,    20.61 tokens per second)").orElseThrow();
        assertFalse(e.prompt());
        assertEquals(128, e.tokens());
        assertTrue(LlamaCppTimings.parse("      total time =    7023.17 ms /   640 tokens").isEmpty());
    }

    @Test
    void summaryTakesTheMedianAndRange() {
        assertEquals(new Summary(2, 1, 9, 3), Summary.of(new double[]{9, 1, 2}));
        assertEquals(new Summary(2.5, 1, 9, 4), Summary.of(new double[]{9, 1, 2, 3}));
    }

    @Test
    void jmhAnnotationProcessingRegisteredTheSampleBenchmark() throws Exception {
        try (InputStream in = getClass().getClassLoader().getResourceAsStream("META-INF/BenchmarkList")) {
            assertNotNull(in, "JMH's generated benchmark list is missing: the annotation processor did not run");
            assertTrue(new String(in.readAllBytes(), StandardCharsets.UTF_8).contains("RmsNormBench"));
        }
    }

    @Test
    void badInputsExitWithStatus2() {
        assertEquals(2, BenchMain.commandLine().execute("compare", "--model", "/nonexistent/model.gguf"));
        assertEquals(2, BenchMain.commandLine().execute("generate", "--shape", "huge", "--out", "/tmp/x.gguf"));
    }
}
