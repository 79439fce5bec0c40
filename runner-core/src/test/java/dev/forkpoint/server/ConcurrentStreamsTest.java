package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.engine.LoadedModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Continuous batching over HTTP: four greedy streams through three APIs, admitted in the same scheduler step (the
 * test holds the model's lock, which every step takes, until all four are queued), give exactly the texts and token
 * counts of the same four requests sent one after another. The prefix cache is emptied before each run, so that both
 * runs evaluate every prompt. On stories260K and on the tiny Qwen3.5 hybrid (whose linear layers carry a recurrent
 * state per sequence through the batched steps).
 */
class ConcurrentStreamsTest {
    static final int N = 48;
    static final java.util.Map<String, ServerHarness> servers = new java.util.HashMap<>();
    static final java.util.Map<String, String> names = new java.util.HashMap<>();
    @org.junit.jupiter.api.io.TempDir
    static java.nio.file.Path dir;
    static ServerHarness h;

    @BeforeAll
    static void start() throws Exception {
        servers.put("stories", ServerHarness.allApis(ServerHarness.config().withParallel(4)));
        names.put("stories", ServerHarness.MODEL);
        java.nio.file.Path hybrid = dev.forkpoint.HybridTestModel.write(dir, "dense", 4096, true);
        servers.put("hybrid", ServerHarness.allApis(ServerHarness.config().withParallel(4), hybrid));
        names.put("hybrid", hybrid.getFileName().toString());
    }

    @AfterAll
    static void stop() {
        servers.values().forEach(ServerHarness::close);
    }

    /** A streamed request and how to read its text and generated-token count. */
    record Call(String path, String body, Reader reader) {}

    interface Reader {
        Output read(String body);
    }

    record Output(String text, int tokens) {}

    static String q(String s) { return OllamaApiTest.quote(s); }

    static List<Call> calls(String model) {
        String m = "\"model\":\"" + model + "\"";
        return List.of(
                new Call("/api/generate", "{" + m + ",\"prompt\":" + q("Once upon a time") + ",\"raw\":true,\"stream\":true,"
                        + "\"options\":{\"temperature\":0,\"num_predict\":" + N + "}}", ConcurrentStreamsTest::ollama),
                new Call("/v1/chat/completions", "{" + m + ",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                        + "\"temperature\":0,\"max_tokens\":" + N + ",\"messages\":[{\"role\":\"user\",\"content\":" + q("Lily wanted a puppy") + "}]}",
                        ConcurrentStreamsTest::openAiChat),
                new Call("/v1/messages", "{" + m + ",\"stream\":true,\"temperature\":0,\"max_tokens\":" + N
                        + ",\"messages\":[{\"role\":\"user\",\"content\":" + q("The sun was hot and the dog") + "}]}", ConcurrentStreamsTest::anthropic),
                new Call("/api/generate", "{" + m + ",\"prompt\":" + q("Tom and Sam went to the park") + ",\"raw\":true,\"stream\":true,"
                        + "\"options\":{\"temperature\":0,\"num_predict\":" + N + "}}", ConcurrentStreamsTest::ollama));
    }

    static Output ollama(String body) {
        StringBuilder text = new StringBuilder();
        JsonNode last = null;
        for (String line : body.split("\n")) {
            last = ServerHarness.json(line);
            if (last.has("error")) throw new AssertionError("error line: " + line);
            text.append(last.path("response").asText());
        }
        assertTrue(last != null && last.path("done").asBoolean(), "ends with the done chunk");
        return new Output(text.toString(), last.get("eval_count").asInt());
    }

    static Output openAiChat(String body) {
        List<ServerHarness.Sse> events = ServerHarness.sse(body);
        assertEquals("[DONE]", events.getLast().data());
        StringBuilder text = new StringBuilder();
        int tokens = -1;
        for (ServerHarness.Sse e : events.subList(0, events.size() - 1)) {
            JsonNode c = e.json();
            if (c.has("error")) throw new AssertionError("error event: " + e.data());
            if (!c.get("choices").isEmpty()) text.append(c.get("choices").get(0).path("delta").path("content").asText(""));
            if (c.hasNonNull("usage")) tokens = c.get("usage").get("completion_tokens").asInt();
        }
        return new Output(text.toString(), tokens);
    }

    static Output anthropic(String body) {
        StringBuilder text = new StringBuilder();
        int tokens = -1;
        for (ServerHarness.Sse e : ServerHarness.sse(body)) {
            JsonNode d = e.json();
            switch (e.event()) {
                case "error" -> throw new AssertionError("error event: " + e.data());
                case "content_block_delta" -> text.append(d.get("delta").get("text").asText());
                case "message_delta" -> tokens = d.get("usage").get("output_tokens").asInt();
                default -> { }
            }
        }
        return new Output(text.toString(), tokens);
    }

    static HttpRequest request(Call c) {
        return HttpRequest.newBuilder(URI.create(h.url(c.path()))).header("Content-Type", "application/json")
                .timeout(java.time.Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(c.body())).build();
    }

    static Output check(Call c, HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), () -> c.path() + ": " + r.body());
        return c.reader().read(r.body());
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"stories", "hybrid"})
    void fourConcurrentGreedyStreamsEqualTheSameRequestsOneAfterAnother(String which) throws Exception {
        h = servers.get(which);
        List<Call> calls = calls(names.get(which));
        List<Output> sequential = new ArrayList<>();
        for (Call c : calls) {
            h.probe().evictCache();
            sequential.add(check(c, h.http.send(request(c), HttpResponse.BodyHandlers.ofString())));
        }
        for (Output o : sequential) assertTrue(o.tokens() >= 40, "the test needs streams of at least 40 tokens: " + o);
        assertEquals(calls.size(), sequential.stream().map(Output::text).distinct().count(), "distinct outputs");

        h.probe().evictCache();
        long stepsBefore = h.stats().steps();
        List<CompletableFuture<HttpResponse<String>>> futures = new ArrayList<>();
        LoadedModel model = h.served().model();
        synchronized (model) {   // no scheduler step can run: all four are queued, then admitted together
            for (Call c : calls) futures.add(h.http.sendAsync(request(c), HttpResponse.BodyHandlers.ofString()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (h.stats().queued() < calls.size() && System.nanoTime() < deadline) Thread.sleep(5);
            assertEquals(calls.size(), h.stats().queued(), "all four requests wait for the first step");
        }
        for (int i = 0; i < calls.size(); i++) {
            Output o = check(calls.get(i), futures.get(i).get(60, TimeUnit.SECONDS));
            assertEquals(sequential.get(i), o, "request " + i + " (" + calls.get(i).path() + ")");
        }
        long tokens = sequential.stream().mapToLong(Output::tokens).sum();
        assertTrue(h.stats().steps() - stepsBefore < tokens, "the streams shared decode passes");
    }
}
