package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 12's defects A and B. A: a num_predict / max_tokens of 2147483647 overflowed {@code prompt + num_predict},
 * passed the context check and wedged the scheduler (the request stayed at the head of the queue, every step failed,
 * every later request hung). Here the poison is sent on every API, each must be refused with a 400 that names the
 * field, and a normal request right after must succeed within a second with the engine's own output. B: num_predict 0
 * generates nothing (Ollama's meaning), with done_reason "length", on Ollama generate and chat and the runner protocol.
 */
@org.junit.jupiter.api.Timeout(120)
class PoisonRequestTest {
    static ServerHarness h;

    @BeforeAll
    static void start() {
        h = ServerHarness.allApis(ServerHarness.config());
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    static final String MAX = "2147483647";

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "/api/generate|{\"model\":\"stories260K\",\"prompt\":\"hi\",\"stream\":false,\"options\":{\"num_predict\":" + MAX + "}}|num_predict",
            "/api/generate|{\"model\":\"stories260K\",\"prompt\":\"hi\",\"options\":{\"num_predict\":" + MAX + "}}|num_predict",
            "/api/chat|{\"model\":\"stories260K\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"options\":{\"num_predict\":" + MAX + "}}|num_predict",
            "/v1/chat/completions|{\"model\":\"stories260K\",\"max_tokens\":" + MAX + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}|max_tokens",
            "/v1/chat/completions|{\"model\":\"stories260K\",\"max_completion_tokens\":" + MAX + ",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}|max_completion_tokens",
            "/v1/completions|{\"model\":\"stories260K\",\"max_tokens\":" + MAX + ",\"prompt\":\"hi\"}|max_tokens",
            "/v1/messages|{\"model\":\"stories260K\",\"max_tokens\":" + MAX + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}|max_tokens",
            "/v1/completions|{\"Prompt\":\"hi\",\"Options\":{\"num_predict\":" + MAX + "}}|num_predict",
    })
    void thePoisonIsRefusedAndTheNextRequestIsServedWithinASecond(String path, String poison, String field) throws Exception {
        HttpResponse<String> r = h.post(path, poison);
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains(field), "the error names " + field + ": " + r.body());
        assertFalse(r.body().contains("Exception"), r.body());

        String expected = h.greedy("Once upon a time", 6).text();
        long t0 = System.nanoTime();
        JsonNode ok = h.postJson("/api/generate", "{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"raw\":true,"
                + "\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":6}}");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(expected, ok.get("response").asText());
        assertTrue(ms < 1000, "the normal request took " + ms + " ms");
        assertEquals(0, h.stats().queued(), "nothing left in the queue");
        assertEquals(0, h.stats().running(), "nothing left running");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "/api/generate|{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"stream\":false,\"options\":{\"num_predict\":0}}|response",
            "/api/chat|{\"model\":\"stories260K\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"Once\"}],\"options\":{\"num_predict\":0}}|message",
    })
    void numPredictZeroGeneratesNothing(String path, String body, String field) throws Exception {
        JsonNode r = h.postJson(path, body);
        assertEquals(0, r.get("eval_count").asInt(), r.toString());
        assertTrue(r.get("prompt_eval_count").asInt() > 0, "the prompt is evaluated: " + r);
        assertEquals("length", r.get("done_reason").asText());
        String text = field.equals("message") ? r.get("message").get("content").asText() : r.get(field).asText();
        assertEquals("", text);
    }

    @Test
    void numPredictZeroStreamsOnlyTheFinalLine() throws Exception {
        List<JsonNode> lines = h.postLines("/api/generate", "{\"model\":\"stories260K\",\"prompt\":\"Once\",\"options\":{\"num_predict\":0}}");
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.getFirst().get("done").asBoolean());
        assertEquals(0, lines.getFirst().get("eval_count").asInt());
    }

    @Test
    void numPredictZeroOnTheRunnerProtocol() throws Exception {
        HttpResponse<String> r = h.post("/v1/completions", "{\"Prompt\":\"Once upon a time\",\"Options\":{\"num_predict\":0}}");
        assertEquals(200, r.statusCode(), r.body());
        String[] lines = r.body().strip().split("\n");
        assertEquals(1, lines.length, r.body());
        JsonNode done = ServerHarness.json(lines[0]);
        assertTrue(done.get("Done").asBoolean());
        assertEquals(0, done.get("EvalCount").asInt());
        assertEquals(1, done.get("DoneReason").asInt(), "length");
    }
}
