package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.engine.GenerationResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Ollama runner protocol (CamelCase JSON Lines) and the API key, on a live server. */
class RunnerProtocolTest {
    static ServerHarness h;

    @BeforeAll
    static void start() {
        h = new ServerHarness(ServerHarness.config().withApiKey("s3cret"));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    private static final String[] AUTH = {"Authorization", "Bearer s3cret"};

    @Test
    void completionRoundTripMatchesTheEngine() throws Exception {
        GenerationResult ref = h.greedy("Once upon a time", 30);
        var r = h.post("/v1/completions", "{\"Prompt\":\"Once upon a time\",\"Options\":{\"temperature\":0,\"num_predict\":30}}", AUTH);
        assertEquals(200, r.statusCode(), r.body());
        StringBuilder text = new StringBuilder();
        List<String> lines = r.body().lines().filter(l -> !l.isEmpty()).toList();
        for (int i = 0; i < lines.size(); i++) {
            JsonNode c = ServerHarness.JSON.readTree(lines.get(i));
            text.append(c.get("Content").asText());
            assertEquals(i == lines.size() - 1, c.get("Done").asBoolean());
            if (i == lines.size() - 1) {
                assertEquals(ref.doneReason().equals("length") ? 1 : 0, c.get("DoneReason").asInt());
                assertEquals(ref.generatedIds().length, c.get("EvalCount").asInt());
                assertTrue(c.get("PromptEvalCount").asInt() >= 1 && c.get("PromptEvalCount").asInt() <= ref.promptTokens());
                assertTrue(c.has("PromptEvalDuration") && c.has("EvalDuration"));
            }
        }
        assertEquals(ref.text(), text.toString());
    }

    @Test
    void formatConstrainsTheCompletionAndGrammarIsRefused() throws Exception {
        var r = h.post("/v1/completions", "{\"Prompt\":\"Once upon a time\",\"Format\":" + StructuredOutputsTest.SCHEMA
                + ",\"Options\":{\"temperature\":0,\"num_predict\":300}}", AUTH);
        assertEquals(200, r.statusCode(), r.body());
        StringBuilder text = new StringBuilder();
        for (String l : r.body().lines().filter(l -> !l.isEmpty()).toList()) text.append(ServerHarness.JSON.readTree(l).path("Content").asText(""));
        StructuredOutputsTest.valid(StructuredOutputsTest.SCHEMA, text.toString());
        var g = h.post("/v1/completions", "{\"Prompt\":\"x\",\"Grammar\":\"root ::= \\\"a\\\"\"}", AUTH);
        assertEquals(400, g.statusCode(), g.body());
        assertTrue(g.body().contains("Grammar"), g.body());
    }

    @Test
    void statusTokenizeAndRedirects() throws Exception {
        var status = h.http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(h.url("/v1/status"))).headers(AUTH).GET().build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        JsonNode s = ServerHarness.JSON.readTree(status.body());
        assertEquals(0, s.get("Status").asInt());
        assertEquals(100, s.get("Progress").asInt());
        assertEquals(h.reference().defaultNumCtx(), s.get("ContextLength").asInt());

        var tok = h.post("/v1/tokenize", "Hello world", AUTH);
        assertEquals(200, tok.statusCode());
        int[] ids = ServerHarness.JSON.readValue(tok.body(), int[].class);
        assertArrayEquals(h.reference().tokenizer().encode("Hello world", false, true), ids);
        assertEquals("Hello world", h.reference().tokenizer().decode(ids));

        var health = h.get("/health");
        assertEquals(308, health.statusCode());
        assertEquals("/v1/status", health.headers().firstValue("Location").orElse("").replaceFirst("^https?://[^/]+", ""));
        var completion = h.post("/completion", "{}", AUTH);
        assertEquals(308, completion.statusCode());
    }

    @Test
    void runnerErrorsArePlainTextBeforeStreaming() throws Exception {
        var r = h.post("/v1/completions", "{\"Prompt\":\"x\",\"Options\":{\"top_p\":7}}", AUTH);
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("option top_p must be in [0, 1], got 7"), r.body());
        var wrong = h.post("/v1/completions", "{\"Prompt\":5}", AUTH);
        assertEquals(400, wrong.statusCode());
        assertTrue(wrong.body().contains("field 'Prompt' must be a string, got number 5"), wrong.body());
    }

    @Test
    void apiKeyIsRequiredWhenConfigured() throws Exception {
        String body = "{\"model\":\"stories260K\",\"prompt\":\"Hi\",\"stream\":false,\"options\":{\"num_predict\":2}}";
        var none = h.post("/api/generate", body);
        assertEquals(401, none.statusCode());
        assertTrue(ServerHarness.JSON.readTree(none.body()).get("error").asText().contains("missing API key"));
        var wrong = h.post("/api/generate", body, "Authorization", "Bearer nope");
        assertEquals(401, wrong.statusCode());
        assertTrue(wrong.body().contains("invalid API key"));
        assertEquals(200, h.post("/api/generate", body, AUTH).statusCode());
        assertEquals(200, h.post("/api/generate", body, "x-api-key", "s3cret").statusCode());
        assertEquals(401, h.get("/metrics").statusCode());
        assertEquals(200, h.get("/").statusCode(), "the health check stays open");
        assertFalse(none.body().contains("s3cret"));
    }
}
