package dev.forkpoint.server.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.server.Json;
import dev.forkpoint.server.ServerHarness;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.anthropic.AnthropicChatModel;
import dev.langchain4j.model.anthropic.AnthropicStreamingChatModel;
import dev.langchain4j.model.anthropic.AnthropicTokenUsage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.output.FinishReason;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Anthropic Messages API against a live server: through the langchain4j Anthropic client and raw HTTP, with
 * expectations from the engine run directly (greedy) and the tokenizer.
 */
class AnthropicApiTest {
    private static final String[] HEADERS = {"x-api-key", "unused", "anthropic-version", "2023-06-01"};
    private static ServerHarness live;

    @BeforeAll
    static void start() throws Exception {
        live = ServerHarness.openAiAndAnthropic(null);
    }

    @AfterAll
    static void stop() {
        if (live != null) live.close();
    }

    private static AnthropicChatModel chatModel(int maxTokens) {
        return AnthropicChatModel.builder().baseUrl(live.url() + "/v1/").apiKey("unused").modelName(ServerHarness.MODEL)
                .temperature(0.0).maxTokens(maxTokens).timeout(Duration.ofSeconds(60)).build();
    }

    @Test
    void chatThroughTheAnthropicClientEqualsTheEngine() {
        String system = "You tell short stories.";
        String user = "Once upon a time, there was a big cat.";
        String prompt = live.render(ChatMessage.of("system", system), ChatMessage.of("user", user));
        GenerationResult expected = live.greedy(prompt, 20);

        ChatResponse r = chatModel(20).chat(ChatRequest.builder().messages(SystemMessage.from(system), UserMessage.from(user)).build());

        assertEquals(expected.text(), r.aiMessage().text());
        AnthropicTokenUsage usage = (AnthropicTokenUsage) r.tokenUsage();
        assertEquals(live.tokens(prompt).length, usage.inputTokenCount() + usage.cacheReadInputTokens(), usage.toString());
        assertEquals(0, usage.cacheCreationInputTokens());
        assertEquals(expected.generatedIds().length, usage.outputTokenCount());
        assertEquals(expected.doneReason().equals("length") ? FinishReason.LENGTH : FinishReason.STOP, r.finishReason());
    }

    @Test
    void streamingChatEqualsNonStreaming() throws Exception {
        String user = "Ben saw a frog in the pond.";
        ChatResponse whole = chatModel(24).chat(ChatRequest.builder().messages(UserMessage.from(user)).build());

        AnthropicStreamingChatModel streaming = AnthropicStreamingChatModel.builder().baseUrl(live.url() + "/v1/").apiKey("unused")
                .modelName(ServerHarness.MODEL).temperature(0.0).maxTokens(24).timeout(Duration.ofSeconds(60)).build();
        List<String> pieces = new ArrayList<>();
        ChatResponse streamed = ServerHarness.stream(streaming, ChatRequest.builder().messages(UserMessage.from(user)).build(), pieces);

        assertTrue(pieces.size() > 1, "expected several pieces, got " + pieces);
        assertEquals(whole.aiMessage().text(), String.join("", pieces));
        assertEquals(whole.aiMessage().text(), streamed.aiMessage().text());
        assertEquals(whole.finishReason(), streamed.finishReason());
        AnthropicTokenUsage a = (AnthropicTokenUsage) whole.tokenUsage(), b = (AnthropicTokenUsage) streamed.tokenUsage();
        assertEquals(a.outputTokenCount(), b.outputTokenCount());
        assertEquals(a.inputTokenCount() + a.cacheReadInputTokens(), b.inputTokenCount() + b.cacheReadInputTokens());
        // the same prompt again: everything but its last token is read from the cache
        assertEquals(1, b.inputTokenCount(), b.toString());
    }

    @Test
    void secondTurnPaysOnlyForItsNewTokens() throws Exception {
        String u1 = "Mia had a blue kite that could fly high.";
        String u2 = "Where did the kite go?";
        String p1 = live.render(ChatMessage.of("user", u1));
        GenerationResult t1 = live.greedy(p1, 12);

        JsonNode r1 = json(live.post("/v1/messages", """
                {"model":"stories260K","max_tokens":12,"temperature":0,"messages":[{"role":"user","content":%s}]}"""
                .formatted(Json.write(u1)), HEADERS));
        assertEquals(t1.text(), r1.get("content").get(0).get("text").asText());
        assertEquals("max_tokens", r1.get("stop_reason").asText());

        String p2 = live.render(ChatMessage.of("user", u1), ChatMessage.of("assistant", t1.text()), ChatMessage.of("user", u2));
        JsonNode r2 = json(live.post("/v1/messages", """
                {"model":"stories260K","max_tokens":4,"temperature":0,"messages":[
                 {"role":"user","content":[{"type":"text","text":%s}]},
                 {"role":"assistant","content":[{"type":"text","text":%s}]},
                 {"role":"user","content":%s}]}""".formatted(Json.write(u1), Json.write(t1.text()), Json.write(u2)), HEADERS));
        int cached = live.expectedReuse(p1, t1, p2);
        assertTrue(cached >= live.tokens(p1).length, "turn 2 should reuse at least turn 1's prompt: " + cached);
        JsonNode usage = r2.get("usage");
        assertEquals(cached, usage.get("cache_read_input_tokens").asInt(), r2.toString());
        assertEquals(live.tokens(p2).length - cached, usage.get("input_tokens").asInt(), r2.toString());
        assertEquals(0, usage.get("cache_creation_input_tokens").asInt());
    }

    @Test
    void streamedEventsComeInAnthropicsOrder() throws Exception {
        String user = "Anna baked a cake for her friend.";
        String prompt = live.render(ChatMessage.of("user", user));
        GenerationResult expected = live.greedy(prompt, 10);
        HttpResponse<String> res = live.post("/v1/messages", """
                {"model":"stories260K","max_tokens":10,"temperature":0,"stream":true,"messages":[{"role":"user","content":%s}]}"""
                .formatted(Json.write(user)), HEADERS);
        assertEquals(200, res.statusCode(), res.body());
        assertTrue(res.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream"));

        List<String> names = new ArrayList<>();
        List<JsonNode> data = new ArrayList<>();
        for (String event : res.body().split("\n\n")) {
            if (event.isBlank() || event.startsWith(":")) continue;
            String[] lines = event.split("\n");
            assertTrue(lines[0].startsWith("event: ") && lines[1].startsWith("data: "), event);
            names.add(lines[0].substring(7));
            JsonNode d = json(lines[1].substring(6));
            assertEquals(names.getLast(), d.get("type").asText());
            data.add(d);
        }
        int deltas = names.size() - 6;
        List<String> want = new ArrayList<>(List.of("message_start", "content_block_start", "ping"));
        for (int i = 0; i < deltas; i++) want.add("content_block_delta");
        want.addAll(List.of("content_block_stop", "message_delta", "message_stop"));
        assertEquals(want, names);

        JsonNode message = data.getFirst().get("message");
        assertTrue(message.get("id").asText().startsWith("msg_"));
        assertEquals(0, message.get("content").size());
        int promptTokens = live.tokens(prompt).length;
        JsonNode startUsage = message.get("usage");
        assertEquals(promptTokens, startUsage.get("input_tokens").asInt() + startUsage.get("cache_read_input_tokens").asInt());
        assertEquals("text", data.get(1).get("content_block").get("type").asText());
        StringBuilder text = new StringBuilder();
        for (JsonNode d : data.subList(3, 3 + deltas)) {
            assertEquals("text_delta", d.get("delta").get("type").asText());
            text.append(d.get("delta").get("text").asText());
        }
        assertEquals(expected.text(), text.toString());
        JsonNode md = data.get(data.size() - 2);
        assertEquals(expected.doneReason().equals("length") ? "max_tokens" : "end_turn", md.get("delta").get("stop_reason").asText());
        assertTrue(md.get("delta").get("stop_sequence").isNull());
        assertEquals(expected.generatedIds().length, md.get("usage").get("output_tokens").asInt());
    }

    @Test
    void aMatchedStopSequenceIsReported() throws Exception {
        String user = "Once upon a time, there was a big cat.";
        String prompt = live.render(ChatMessage.of("user", user));
        GenerationResult free = live.greedy(prompt, 20);
        String[] words = free.text().trim().split(" ");
        String stop = words[Math.min(2, words.length - 1)];
        JsonNode r = json(live.post("/v1/messages", """
                {"model":"stories260K","max_tokens":20,"temperature":0,"stop_sequences":["zzzq",%s],
                 "messages":[{"role":"user","content":%s}]}""".formatted(Json.write(stop), Json.write(user)), HEADERS));
        assertEquals("stop_sequence", r.get("stop_reason").asText(), r.toString());
        assertEquals(stop, r.get("stop_sequence").asText());
        assertEquals(free.text().substring(0, free.text().indexOf(stop)), r.get("content").get(0).get("text").asText());
    }

    @Test
    void countTokensCountsTheRenderedPrompt() throws Exception {
        String prompt = live.render(ChatMessage.of("system", "Be kind."), ChatMessage.of("user", "Hi there"));
        JsonNode r = json(live.post("/v1/messages/count_tokens", """
                {"model":"stories260K","system":[{"type":"text","text":"Be kind."}],"messages":[{"role":"user","content":"Hi there"}]}""", HEADERS));
        assertEquals(live.tokens(prompt).length, r.get("input_tokens").asInt(), r.toString());
    }

    @Test
    void badInputGetsTheAnthropicErrorNamingTheField() throws Exception {
        String longText = "the cat and the dog ".repeat(1000);
        record Case(String body, int status, String type, String mentions) {}
        List<Case> cases = List.of(
                new Case("{\"model\":", 400, "invalid_request_error", "JSON"),
                new Case("{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 400, "invalid_request_error", "max_tokens"),
                new Case(msg("\"max_tokens\":\"ten\""), 400, "invalid_request_error", "max_tokens"),
                new Case(msg("\"max_tokens\":5,\"temperature\":1.5"), 400, "invalid_request_error", "temperature"),
                new Case(msg("\"max_tokens\":5,\"top_k\":-1"), 400, "invalid_request_error", "top_k"),
                new Case(msg("\"max_tokens\":5,\"stop_sequences\":\"x\""), 400, "invalid_request_error", "stop_sequences"),
                new Case(msg("\"max_tokens\":5,\"tool_choice\":{\"type\":\"any\"}"), 400, "invalid_request_error", "tool_choice"),
                new Case(msg("\"max_tokens\":" + live.reference().defaultNumCtx()), 400, "invalid_request_error", "max_tokens"),
                new Case("{\"model\":\"nope\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 404, "not_found_error", "nope"),
                new Case("{\"model\":\"stories260K\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
                        + "\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"AAAA\"}}]}]}", 400, "invalid_request_error", "messages[0].content[0]"),
                new Case("{\"model\":\"stories260K\",\"max_tokens\":5,\"messages\":[{\"role\":\"system\",\"content\":\"hi\"}]}", 400, "invalid_request_error", "messages[0].role"),
                new Case("{\"model\":\"stories260K\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":" + Json.write(longText) + "}]}",
                        400, "invalid_request_error", "messages"),
                new Case("{\"model\":\"stories260K\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":"
                        + Json.write("x".repeat((int) ServerHarness.BODY_LIMIT)) + "}]}", 413, "request_too_large", null));
        for (Case c : cases) {
            HttpResponse<String> res = live.post("/v1/messages", c.body(), HEADERS);
            String where = (c.body().length() > 200 ? c.body().substring(0, 200) : c.body()) + " → " + res.body();
            assertEquals(c.status(), res.statusCode(), where);
            JsonNode body = json(res);
            assertEquals("error", body.get("type").asText(), where);
            assertEquals(c.type(), body.get("error").get("type").asText(), where);
            String message = body.get("error").get("message").asText();
            assertFalse(message.isBlank(), where);
            if (c.mentions() != null) assertTrue(message.contains(c.mentions()), where);
        }
        HttpResponse<String> ok = live.post("/v1/messages", msg("\"max_tokens\":3"), HEADERS);
        assertEquals(200, ok.statusCode(), ok.body());
    }

    @Test
    void theApiKeyMayComeAsXApiKey() throws Exception {
        try (ServerHarness keyed = ServerHarness.openAiAndAnthropic("sekret")) {
            HttpResponse<String> bad = keyed.post("/v1/messages", msg("\"max_tokens\":2"), "x-api-key", "wrong");
            assertEquals(401, bad.statusCode());
            assertEquals("authentication_error", json(bad).get("error").get("type").asText());
            HttpResponse<String> ok = keyed.post("/v1/messages", msg("\"max_tokens\":2"), "x-api-key", "sekret", "anthropic-version", "2023-06-01");
            assertEquals(200, ok.statusCode(), ok.body());
            assertNotNull(json(ok).get("content"));
        }
    }

    private static String msg(String extra) {
        return "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]," + extra + "}";
    }

    private static JsonNode json(HttpResponse<String> res) {
        return ServerHarness.json(res.body());
    }

    private static JsonNode json(String s) {
        return ServerHarness.json(s);
    }
}
