package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.engine.LoadedModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * With one sequence slot and no queue, a request that arrives while a generation runs gets 503 with Retry-After in its
 * API's error shape (streamed requests too: the refusal comes before any event), and the server keeps serving: the
 * running generation completes with the engine's output and the next request succeeds. While the refusals are made
 * the test holds the model's lock, so the running generation cannot finish meanwhile.
 */
class QueueFullTest {
    static ServerHarness h;

    @BeforeAll
    static void start() {
        h = ServerHarness.allApis(ServerHarness.config().withParallel(1).withQueueLimit(0));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    static String generate(String prompt, int n) {
        return "{\"model\":\"stories260K\",\"prompt\":" + OllamaApiTest.quote(prompt) + ",\"raw\":true,\"stream\":false,"
                + "\"options\":{\"temperature\":0,\"num_predict\":" + n + "}}";
    }

    @Test
    void aFullQueueGets503WithRetryAfterInEachApisShapeAndTheServerKeepsServing() throws Exception {
        String prompt = "Once upon a time";
        String expected = h.greedy(prompt, 200).text();
        LoadedModel model = h.served().model();
        CompletableFuture<HttpResponse<String>> running;
        h.probe().pace(10);   // 200 tokens take seconds: the test takes the lock while the generation runs
        try {
            running = h.http.sendAsync(HttpRequest.newBuilder(URI.create(h.url("/api/generate")))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(generate(prompt, 200))).build(),
                    HttpResponse.BodyHandlers.ofString());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (h.stats().running() == 0 && System.nanoTime() < deadline) Thread.sleep(1);
            // paced until the lock is held: unpaced, the 200 tokens could finish before the test takes it
            synchronized (model) {
                assertEquals(1, h.stats().running(), "one generation runs");
                assertFalse(running.isDone(), "and has not finished");
                String m = "\"model\":\"stories260K\"";
                String msgs = ",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]";

                JsonNode ollama = busy("/api/generate", "{" + m + ",\"prompt\":\"Hi\",\"stream\":true}", "application/json");
                assertTrue(ollama.get("error").isTextual() && !ollama.get("error").asText().isEmpty(), ollama.toString());
                assertEquals(1, ollama.size(), "Ollama's error is {\"error\":\"…\"}: " + ollama);
                assertTrue(busy("/api/chat", "{" + m + msgs + "}", "application/json").get("error").isTextual());

                JsonNode openai = busy("/v1/chat/completions", "{" + m + ",\"stream\":true" + msgs + "}", "application/json");
                assertEquals("server_error", openai.get("error").get("type").asText(), openai.toString());
                assertEquals("overloaded", openai.get("error").get("code").asText());
                assertFalse(openai.get("error").get("message").asText().isEmpty());
                assertEquals("server_error", busy("/v1/completions", "{" + m + ",\"prompt\":\"Hi\"}", "application/json")
                        .get("error").get("type").asText());

                JsonNode anthropic = busy("/v1/messages", "{" + m + ",\"stream\":true,\"max_tokens\":8" + msgs + "}", "application/json");
                assertEquals("error", anthropic.get("type").asText(), anthropic.toString());
                assertEquals("overloaded_error", anthropic.get("error").get("type").asText());
                assertFalse(anthropic.get("error").get("message").asText().isEmpty());

                HttpResponse<String> runner = h.post("/v1/completions", "{\"Prompt\":\"Hi\",\"Options\":{\"num_predict\":4}}");
                assertEquals(503, runner.statusCode(), runner.body());
                assertTrue(runner.headers().firstValue("Retry-After").isPresent());
                assertTrue(runner.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
                assertFalse(runner.body().isBlank());
                assertEquals(0, h.stats().queued(), "nothing was queued");
            }
        } finally {
            h.probe().pace(0);
        }
        HttpResponse<String> done = running.get(60, TimeUnit.SECONDS);
        assertEquals(200, done.statusCode(), done.body());
        assertEquals(expected, ServerHarness.JSON.readTree(done.body()).get("response").asText(), "the running generation completes");
        assertEquals(h.greedy("Lily", 12).text(), h.postJson("/api/generate", generate("Lily", 12)).get("response").asText(),
                "the server keeps serving");
    }

    /** A 503 with a positive Retry-After and a JSON body (not a stream). */
    private static JsonNode busy(String path, String body, String contentType) throws Exception {
        HttpResponse<String> r = h.post(path, body);
        assertEquals(503, r.statusCode(), path + ": " + r.body());
        String retry = r.headers().firstValue("Retry-After").orElseThrow(() -> new AssertionError(path + ": no Retry-After"));
        assertTrue(Integer.parseInt(retry) >= 1, "Retry-After " + retry);
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith(contentType), path + ": " + r.headers().map());
        return ServerHarness.JSON.readTree(r.body());
    }
}
