package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.engine.GenerationResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Ollama API of a live server against the engine's own greedy output. */
class OllamaApiTest {
    static ServerHarness h;

    @BeforeAll
    static void start() {
        h = new ServerHarness(ServerHarness.config().withMaxBodyBytes(64 * 1024));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    private static String generate(String prompt, int n, boolean stream) {
        return "{\"model\":\"" + ServerHarness.MODEL + "\",\"prompt\":" + quote(prompt) + ",\"raw\":true,\"stream\":" + stream
                + ",\"options\":{\"temperature\":0,\"num_predict\":" + n + "}}";
    }

    static String quote(String s) {
        try {
            return ServerHarness.JSON.writeValueAsString(s);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void rootSaysOllamaIsRunning() throws Exception {
        var r = h.get("/");
        assertEquals(200, r.statusCode());
        assertEquals("Ollama is running", r.body());
        var head = h.http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(h.url("/")))
                .method("HEAD", java.net.http.HttpRequest.BodyPublishers.noBody()).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(200, head.statusCode());
    }

    @Test
    void generateNotStreamedIsTheEnginesGreedyOutput() throws Exception {
        GenerationResult ref = h.greedy("Once upon a time", 40);
        JsonNode r = h.postJson("/api/generate", generate("Once upon a time", 40, false));
        assertEquals(ref.text(), r.get("response").asText());
        assertTrue(r.get("done").asBoolean());
        assertEquals(ref.doneReason(), r.get("done_reason").asText());
        assertEquals(ref.generatedIds().length, r.get("eval_count").asInt());
        assertEquals(ref.promptTokens(), r.get("prompt_eval_count").asInt() + r.get("prompt_cache_count").asInt());
        for (String f : List.of("total_duration", "load_duration", "prompt_eval_duration", "eval_duration", "created_at", "model")) {
            assertTrue(r.has(f), f + " missing in " + r);
        }
        assertTrue(r.get("total_duration").asLong() >= r.get("eval_duration").asLong());
    }

    @Test
    void generateStreamedIsTheEnginesGreedyOutputPieceByPiece() throws Exception {
        GenerationResult ref = h.greedy("The little dog", 30);
        List<JsonNode> lines = h.postLines("/api/generate", generate("The little dog", 30, true));
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < lines.size() - 1; i++) {
            assertFalse(lines.get(i).get("done").asBoolean());
            text.append(lines.get(i).get("response").asText());
        }
        JsonNode last = lines.getLast();
        assertTrue(last.get("done").asBoolean());
        assertEquals("", last.get("response").asText());
        assertEquals(ref.text(), text.toString());
        assertTrue(lines.size() > 2, "streamed in pieces");
        assertEquals(ref.generatedIds().length, last.get("eval_count").asInt());
        assertEquals(ref.doneReason(), last.get("done_reason").asText());
    }

    @Test
    void chatStreamedAndNotIsTheEnginesGreedyOutputOfTheRenderedChat() throws Exception {
        String user = "Lily went to the park";
        GenerationResult ref = h.greedy(h.render(ChatMessage.of("user", user)), 25);
        String body = "{\"model\":\"" + ServerHarness.MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":" + quote(user)
                + "}],\"options\":{\"temperature\":0,\"num_predict\":25},\"stream\":";
        JsonNode whole = h.postJson("/api/chat", body + "false}");
        assertEquals("assistant", whole.get("message").get("role").asText());
        assertEquals(ref.text(), whole.get("message").get("content").asText());
        assertEquals(ref.generatedIds().length, whole.get("eval_count").asInt());

        List<JsonNode> lines = h.postLines("/api/chat", body + "true}");
        StringBuilder text = new StringBuilder();
        for (JsonNode l : lines) text.append(l.get("message").get("content").asText());
        assertEquals(ref.text(), text.toString());
        assertTrue(lines.getLast().get("done").asBoolean());
        // the second identical request reuses the whole prompt but its last token
        assertEquals(1, lines.getLast().get("prompt_eval_count").asInt());
        assertEquals(ref.promptTokens() - 1, lines.getLast().get("prompt_cache_count").asInt());
    }

    @Test
    void secondChatTurnEvaluatesOnlyItsNewTokens() throws Exception {
        String u1 = "Tom had a red ball", u2 = "What did Tom do next?";
        String turn1 = "{\"model\":\"" + ServerHarness.MODEL + "\",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":20},"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + quote(u1) + "}]}";
        JsonNode r1 = h.postJson("/api/chat", turn1);
        String reply = r1.get("message").get("content").asText();
        assertEquals("length", r1.get("done_reason").asText(), "the test needs a turn cut by num_predict");
        String turn2 = "{\"model\":\"" + ServerHarness.MODEL + "\",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":5},"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + quote(u1) + "},{\"role\":\"assistant\",\"content\":" + quote(reply)
                + "},{\"role\":\"user\",\"content\":" + quote(u2) + "}]}";
        JsonNode r2 = h.postJson("/api/chat", turn2);

        // Independent expectation: the common prefix of what the cache holds after turn 1 and turn 2's prompt
        String p1 = h.render(ChatMessage.of("user", u1));
        GenerationResult ref1 = h.greedy(p1, 20);
        assertEquals(reply, ref1.text());
        String p2 = h.render(ChatMessage.of("user", u1), ChatMessage.of("assistant", reply), ChatMessage.of("user", u2));
        int common = h.expectedReuse(p1, ref1, p2);
        assertTrue(common >= h.tokens(p1).length, "turn 2 starts with all of turn 1's prompt");
        assertEquals(common, r2.get("prompt_cache_count").asInt());
        assertEquals(h.tokens(p2).length - common, r2.get("prompt_eval_count").asInt());
    }

    @Test
    void tagsShowPsVersion() throws Exception {
        JsonNode tags = ServerHarness.JSON.readTree(h.get("/api/tags").body());
        JsonNode m = tags.get("models").get(0);
        assertEquals("stories260K.gguf", m.get("name").asText());
        assertEquals(java.nio.file.Files.size(h.modelFile), m.get("size").asLong());
        assertEquals(64, m.get("digest").asText().length());
        assertEquals("gguf", m.get("details").get("format").asText());

        JsonNode show = h.postJson("/api/show", "{\"model\":\"stories260K\"}");
        assertEquals("llama", show.get("model_info").get("general.architecture").asText());
        assertEquals(h.reference().config().contextLength(), show.get("model_info").get("llama.context_length").asInt());

        JsonNode ps = ServerHarness.JSON.readTree(h.get("/api/ps").body());
        assertEquals("stories260K.gguf", ps.get("models").get(0).get("name").asText());
        JsonNode version = ServerHarness.JSON.readTree(h.get("/api/version").body());
        assertFalse(version.get("version").asText().isEmpty());
    }

    @Test
    void badInputGetsItsStatusAndAMessageNamingTheFieldAndTheServerKeepsServing() throws Exception {
        String m = "\"model\":\"" + ServerHarness.MODEL + "\"";
        String longPrompt = "Once upon a time there was a little girl named Lily who liked to play outside in the sun.";
        record Case(String path, String body, int status, String message) {}
        int trained = h.reference().config().contextLength();
        List<Case> cases = List.of(
                new Case("/api/generate", "{\"model\":", 400, "not valid JSON"),
                new Case("/api/generate", "", 400, "request body is empty"),
                new Case("/api/generate", "[1,2]", 400, "must be a JSON object"),
                new Case("/api/generate", "{" + m + ",\"prompt\":123}", 400, "field 'prompt' must be a string, got number 123"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"stream\":\"yes\"}", 400, "field 'stream' must be a boolean, got string \"yes\""),
                new Case("/api/chat", "{" + m + ",\"messages\":\"hi\"}", 400, "field 'messages' must be an array"),
                new Case("/api/chat", "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "field 'messages[0].content' must be a string, got number 5"),
                new Case("/api/chat", "{" + m + ",\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", 400, "messages[0].role"),
                new Case("/api/generate", "{\"model\":\"nope\",\"prompt\":\"x\"}", 404, "model 'nope' not found"),
                new Case("/api/generate", "{\"prompt\":\"x\"}", 400, "model is required"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"" + "x".repeat(70 * 1024) + "\"}", 413, "larger than the limit"),
                new Case("/api/generate", "{" + m + ",\"prompt\":" + quote(longPrompt) + ",\"options\":{\"num_ctx\":8}}", 400, "num_ctx is 8"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":{\"num_ctx\":100000}}", 400, "num_ctx must be in [1, " + trained + "]"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":{\"num_ctx\":64,\"num_predict\":100}}", 400, "exceeds num_ctx 64"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":{\"temperature\":-1}}", 400, "option temperature must be a finite number >= 0"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":{\"top_k\":\"many\"}}", 400, "option top_k must be an integer, got string \"many\""),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":{\"top_p\":2}}", 400, "option top_p must be in [0, 1], got 2"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":{\"bogus\":1}}", 400, "unknown option 'bogus'"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":{\"mirostat\":2}}", 400, "mirostat"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"options\":\"hot\"}", 400, "field 'options' must be an object"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"format\":\"yaml\"}", 400, "format must be \"json\" or a JSON schema object, got \"yaml\""),
                new Case("/api/chat", "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"format\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"multipleOf\":2}}}}", 400, "format: schema #/properties/n: keyword 'multipleOf' is not supported"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"keep_alive\":\"soon\"}", 400, "keep_alive must be"),
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"images\":[\"aGk=\"]}", 400, "images are not supported"),
                new Case("/api/show", "{\"model\":\"nope\"}", 404, "model 'nope' not found"),
                new Case("/api/nothing", "{}", 404, "no route for POST /api/nothing"));
        for (Case c : cases) {
            var r = h.post(c.path(), c.body());
            assertEquals(c.status(), r.statusCode(), c + " → " + r.body());
            JsonNode err = ServerHarness.JSON.readTree(r.body());
            assertTrue(err.get("error").asText().contains(c.message()), c + " → " + r.body());
            assertFalse(r.body().contains("at dev.forkpoint"), "no stack trace: " + r.body());
        }
        // still serving, and still exact
        GenerationResult ref = h.greedy("Once upon a time", 10);
        assertEquals(ref.text(), h.postJson("/api/generate", generate("Once upon a time", 10, false)).get("response").asText());
    }

    @Test
    void metricsParseAndCount() throws Exception {
        Map<String, Double> before = h.metrics();
        String req = "forkpoint_http_requests_total{endpoint=\"/api/generate\",method=\"POST\",status=\"200\"}";
        String evaluated = "forkpoint_prompt_tokens_evaluated_total{model=\"stories260K.gguf\"}";
        String reused = "forkpoint_prompt_tokens_reused_total{model=\"stories260K.gguf\"}";
        String ttft = "forkpoint_time_to_first_token_seconds_count{model=\"stories260K.gguf\"}";
        GenerationResult ref = h.greedy("A cat sat on the mat", 12);
        h.postJson("/api/generate", generate("A cat sat on the mat", 12, false));
        h.postJson("/api/generate", generate("A cat sat on the mat", 12, false));
        Map<String, Double> after = h.metrics();
        assertEquals(before.getOrDefault(req, 0.0) + 2, after.get(req));
        double tokens = after.get(evaluated) - before.getOrDefault(evaluated, 0.0) + after.get(reused) - before.getOrDefault(reused, 0.0);
        assertEquals(2.0 * ref.promptTokens(), tokens, "every prompt token is either evaluated or reused");
        assertTrue(after.get(reused) - before.getOrDefault(reused, 0.0) >= ref.promptTokens() - 1, "the second request reused the first's prompt");
        assertEquals(before.getOrDefault(ttft, 0.0) + 2, after.get(ttft));
        assertTrue(after.get("forkpoint_kv_pages_used{model=\"stories260K.gguf\"}") > 0);
        assertTrue(after.containsKey("forkpoint_kv_pages_free{model=\"stories260K.gguf\"}"));
        assertTrue(after.containsKey("forkpoint_queue_depth{model=\"stories260K.gguf\"}"));
    }
}
