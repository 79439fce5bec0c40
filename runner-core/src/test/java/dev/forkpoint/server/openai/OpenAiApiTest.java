package dev.forkpoint.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.server.ServerHarness;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.model.openai.OpenAiLanguageModel;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.langchain4j.model.openai.OpenAiTokenUsage;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.Response;
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
 * The OpenAI API against a live server: through the langchain4j OpenAI client (a real client library) and raw HTTP.
 * Expectations come from the engine run directly on the same prompt (greedy), and from the tokenizer for token counts.
 */
class OpenAiApiTest {
    private static ServerHarness live;

    @BeforeAll
    static void start() throws Exception {
        live = ServerHarness.openAiAndAnthropic(null);
    }

    @AfterAll
    static void stop() {
        if (live != null) live.close();
    }

    private static OpenAiChatModel chatModel(int maxTokens) {
        return OpenAiChatModel.builder().baseUrl(live.url() + "/v1").apiKey("unused").modelName(ServerHarness.MODEL)
                .temperature(0.0).maxTokens(maxTokens).timeout(Duration.ofSeconds(60)).build();
    }

    @Test
    void chatThroughTheOpenAiClientEqualsTheEngine() {
        String user = "Once upon a time, there was a little dog.";
        GenerationResult expected = live.greedy(live.render(ChatMessage.of("user", user)), 20);

        ChatResponse r = chatModel(20).chat(ChatRequest.builder().messages(UserMessage.from(user)).build());

        assertEquals(expected.text(), r.aiMessage().text());
        int promptTokens = live.tokens(live.render(ChatMessage.of("user", user))).length;
        assertEquals(promptTokens, r.tokenUsage().inputTokenCount());
        assertEquals(expected.generatedIds().length, r.tokenUsage().outputTokenCount());
        assertEquals(promptTokens + expected.generatedIds().length, r.tokenUsage().totalTokenCount());
        assertEquals(expected.doneReason().equals("length") ? FinishReason.LENGTH : FinishReason.STOP, r.finishReason());
        OpenAiTokenUsage usage = (OpenAiTokenUsage) r.tokenUsage();
        assertNotNull(usage.inputTokensDetails(), "prompt_tokens_details missing");
        int cached = usage.inputTokensDetails().cachedTokens();
        assertTrue(cached >= 0 && cached < promptTokens, "cached " + cached);
    }

    @Test
    void streamingChatEqualsNonStreaming() throws Exception {
        String user = "Lily went to the park with her mom.";
        ChatResponse whole = chatModel(24).chat(ChatRequest.builder().messages(UserMessage.from(user)).build());

        OpenAiStreamingChatModel streaming = OpenAiStreamingChatModel.builder().baseUrl(live.url() + "/v1").apiKey("unused")
                .modelName(ServerHarness.MODEL).temperature(0.0).maxTokens(24).timeout(Duration.ofSeconds(60)).build();
        List<String> pieces = new ArrayList<>();
        ChatResponse streamed = ServerHarness.stream(streaming, ChatRequest.builder().messages(UserMessage.from(user)).build(), pieces);

        assertTrue(pieces.size() > 1, "expected several pieces, got " + pieces);
        assertEquals(whole.aiMessage().text(), String.join("", pieces));
        assertEquals(whole.aiMessage().text(), streamed.aiMessage().text());
        assertEquals(whole.finishReason(), streamed.finishReason());
        assertNotNull(streamed.tokenUsage(), "stream_options.include_usage gave no usage");
        assertEquals(whole.tokenUsage().inputTokenCount(), streamed.tokenUsage().inputTokenCount());
        assertEquals(whole.tokenUsage().outputTokenCount(), streamed.tokenUsage().outputTokenCount());
        // the second identical prompt reuses all its tokens but the last from the prefix cache
        assertEquals(whole.tokenUsage().inputTokenCount() - 1,
                ((OpenAiTokenUsage) streamed.tokenUsage()).inputTokensDetails().cachedTokens());
    }

    @Test
    void completionsThroughTheOpenAiClientEqualTheEngine() {
        String prompt = "The sun was shining and";
        OpenAiLanguageModel model = OpenAiLanguageModel.builder().baseUrl(live.url() + "/v1").apiKey("unused")
                .modelName(ServerHarness.MODEL).temperature(0.0).build();
        // OpenAI's default max_tokens for completions is 16
        GenerationResult expected = live.greedy(prompt, 16);

        Response<String> r = model.generate(prompt);

        assertEquals(expected.text(), r.content());
        assertEquals(live.tokens(prompt).length, r.tokenUsage().inputTokenCount());
        assertEquals(expected.generatedIds().length, r.tokenUsage().outputTokenCount());
    }

    @Test
    void streamedCompletionsEndWithUsageAndDone() throws Exception {
        String prompt = "A big bird";
        GenerationResult expected = live.greedy(prompt, 10);
        HttpResponse<String> res = live.post("/v1/completions", """
                {"model":"stories260K","prompt":["A big bird"],"max_tokens":10,"temperature":0,"stream":true,
                 "stream_options":{"include_usage":true}}""");
        assertEquals(200, res.statusCode(), res.body());
        List<JsonNode> events = sse(res.body());
        StringBuilder text = new StringBuilder();
        for (JsonNode e : events.subList(0, events.size() - 1)) {
            assertEquals("text_completion", e.get("object").asText());
            text.append(e.get("choices").get(0).get("text").asText());
        }
        assertEquals(expected.text(), text.toString());
        JsonNode finish = events.get(events.size() - 2).get("choices").get(0);
        assertEquals(expected.doneReason(), finish.get("finish_reason").asText());
        JsonNode last = events.getLast();
        assertEquals(0, last.get("choices").size());
        assertEquals(live.tokens(prompt).length, last.get("usage").get("prompt_tokens").asInt());
        assertEquals(expected.generatedIds().length, last.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void streamedChatChunksHaveTheRoleFirstAndUsageLast() throws Exception {
        String user = "Tim had a red ball.";
        GenerationResult expected = live.greedy(live.render(ChatMessage.of("user", user)), 12);
        HttpResponse<String> res = live.post("/v1/chat/completions", """
                {"model":"stories260K","messages":[{"role":"user","content":[{"type":"text","text":"Tim had a red ball."}]}],
                 "max_completion_tokens":12,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}""");
        assertEquals(200, res.statusCode(), res.body());
        assertTrue(res.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream"));
        List<JsonNode> events = sse(res.body());
        JsonNode first = events.getFirst().get("choices").get(0);
        assertEquals("assistant", first.get("delta").get("role").asText());
        StringBuilder text = new StringBuilder();
        String finish = null;
        for (JsonNode e : events.subList(0, events.size() - 1)) {
            assertEquals("chat.completion.chunk", e.get("object").asText());
            assertEquals(events.getFirst().get("id").asText(), e.get("id").asText());
            assertTrue(e.get("usage").isNull());
            JsonNode c = e.get("choices").get(0);
            if (c.get("delta").has("content")) text.append(c.get("delta").get("content").asText());
            if (!c.get("finish_reason").isNull()) finish = c.get("finish_reason").asText();
        }
        assertEquals(expected.text(), text.toString());
        assertEquals(expected.doneReason(), finish);
        JsonNode usage = events.getLast().get("usage");
        assertEquals(0, events.getLast().get("choices").size());
        assertEquals(expected.generatedIds().length, usage.get("completion_tokens").asInt());
        assertEquals(usage.get("prompt_tokens").asInt() + usage.get("completion_tokens").asInt(), usage.get("total_tokens").asInt());
    }

    @Test
    void secondTurnReusesTheFirstFromThePrefixCache() throws Exception {
        String u1 = "Sam and Max found a shiny key under a rock.";
        String u2 = "What did they do next?";
        String p1 = live.render(ChatMessage.of("user", u1));
        GenerationResult t1 = live.greedy(p1, 12);

        JsonNode r1 = ServerHarness.json(live.post("/v1/chat/completions", """
                {"model":"stories260K","messages":[{"role":"user","content":%s}],"max_tokens":12,"temperature":0}"""
                .formatted(quote(u1))).body());
        assertEquals(t1.text(), r1.get("choices").get(0).get("message").get("content").asText());
        assertEquals("length", r1.get("choices").get(0).get("finish_reason").asText());

        String p2 = live.render(ChatMessage.of("user", u1), ChatMessage.of("assistant", t1.text()), ChatMessage.of("user", u2));
        JsonNode r2 = ServerHarness.json(live.post("/v1/chat/completions", """
                {"model":"stories260K","messages":[{"role":"user","content":%s},
                 {"role":"assistant","content":%s},{"role":"user","content":%s}],"max_tokens":4,"temperature":0}"""
                .formatted(quote(u1), quote(t1.text()), quote(u2))).body());
        JsonNode usage = r2.get("usage");
        int promptTokens = live.tokens(p2).length;
        assertEquals(promptTokens, usage.get("prompt_tokens").asInt(), r2.toString());
        int expectedCached = live.expectedReuse(p1, t1, p2);
        assertTrue(expectedCached >= live.tokens(p1).length, "turn 2 should reuse at least turn 1's prompt: " + expectedCached);
        assertEquals(expectedCached, usage.get("prompt_tokens_details").get("cached_tokens").asInt(), r2.toString());
    }

    @Test
    void aContinuedCompletionReusesTheGeneratedTokensButTheLast() throws Exception {
        String p1 = "The little boat sailed";
        GenerationResult t1 = live.greedy(p1, 10);
        JsonNode r1 = ServerHarness.json(live.post("/v1/completions", """
                {"model":"stories260K","prompt":%s,"max_tokens":10,"temperature":0}""".formatted(quote(p1))).body());
        assertEquals(t1.text(), r1.get("choices").get(0).get("text").asText());
        String p2 = p1 + t1.text() + " Then";
        JsonNode r2 = ServerHarness.json(live.post("/v1/completions", """
                {"model":"stories260K","prompt":%s,"max_tokens":2,"temperature":0}""".formatted(quote(p2))).body());
        int expectedCached = live.expectedReuse(p1, t1, p2);
        assertTrue(expectedCached > live.tokens(p1).length, "the generated tokens should be reusable: " + expectedCached);
        JsonNode usage = r2.get("usage");
        assertEquals(live.tokens(p2).length, usage.get("prompt_tokens").asInt());
        assertEquals(expectedCached, usage.get("prompt_tokens_details").get("cached_tokens").asInt(), r2.toString());
    }

    @Test
    void stopStringsEndTheReplyBeforeThem() throws Exception {
        String user = "Once upon a time, there was a little dog.";
        GenerationResult free = live.greedy(live.render(ChatMessage.of("user", user)), 20);
        String[] words = free.text().trim().split(" ");
        String stop = words[Math.min(2, words.length - 1)];
        int at = free.text().indexOf(stop);
        JsonNode r = ServerHarness.json(live.post("/v1/chat/completions", """
                {"model":"stories260K","messages":[{"role":"user","content":%s}],"max_tokens":20,"temperature":0,"stop":%s}"""
                .formatted(quote(user), quote(stop))).body());
        assertEquals(free.text().substring(0, at), r.get("choices").get(0).get("message").get("content").asText(), r.toString());
        assertEquals("stop", r.get("choices").get(0).get("finish_reason").asText());
    }

    @Test
    void modelsAreListedAndFound() throws Exception {
        JsonNode list = ServerHarness.json(live.get("/v1/models").body());
        assertEquals("list", list.get("object").asText());
        String id = list.get("data").get(0).get("id").asText();
        assertEquals("stories260K.gguf", id);
        assertEquals("model", list.get("data").get(0).get("object").asText());
        HttpResponse<String> one = live.get("/v1/models/" + id);
        assertEquals(200, one.statusCode());
        assertEquals(id, ServerHarness.json(one.body()).get("id").asText());
        HttpResponse<String> missing = live.get("/v1/models/nope:7b");
        assertEquals(404, missing.statusCode());
        assertEquals("model_not_found", ServerHarness.json(missing.body()).get("error").get("code").asText());
    }

    @Test
    void badInputGetsTheOpenAiErrorNamingTheField() throws Exception {
        String longText = "the cat and the dog ".repeat(1000);   // beyond the context, within the body limit
        int numCtx = live.reference().defaultNumCtx();
        record Case(String path, String body, int status, String param) {}
        List<Case> cases = List.of(
                new Case("/v1/chat/completions", "{\"model\":", 400, null),
                new Case("/v1/chat/completions", "{\"model\":\"stories260K\",\"messages\":\"hi\"}", 400, "messages"),
                new Case("/v1/chat/completions", msg("\"temperature\":\"hot\""), 400, "temperature"),
                new Case("/v1/chat/completions", msg("\"temperature\":3"), 400, "temperature"),
                new Case("/v1/chat/completions", msg("\"max_tokens\":1.5"), 400, "max_tokens"),
                new Case("/v1/chat/completions", msg("\"n\":2"), 400, "n"),
                new Case("/v1/chat/completions", msg("\"response_format\":{\"type\":\"xml\"}"), 400, "response_format.type"),
                new Case("/v1/chat/completions", msg("\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"allOf\":[]}}}"), 400, "response_format.json_schema.schema"),
                new Case("/v1/chat/completions", msg("\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"nope\"}},"
                        + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]"), 400, "tool_choice.function.name"),
                new Case("/v1/chat/completions", msg("\"stop\":[\"a\",7]"), 400, "stop[1]"),
                new Case("/v1/chat/completions", msg("\"tool_choice\":\"required\""), 400, "tool_choice"),
                new Case("/v1/chat/completions", "{\"model\":\"stories260K\"}", 400, "messages"),
                new Case("/v1/chat/completions", "{\"model\":\"nope\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 404, "model"),
                new Case("/v1/chat/completions", "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
                        + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}}]}]}", 400, "messages[0].content[1]"),
                new Case("/v1/chat/completions", "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"wizard\",\"content\":\"hi\"}]}", 400, "messages[0].role"),
                new Case("/v1/chat/completions", "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":" + quote(longText) + "}]}", 400, "messages"),
                new Case("/v1/chat/completions", msg("\"max_tokens\":" + numCtx), 400, "max_tokens"),
                new Case("/v1/chat/completions", "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":"
                        + quote("x".repeat((int) ServerHarness.BODY_LIMIT)) + "}]}", 413, null),
                new Case("/v1/completions", "{\"model\":\"stories260K\",\"prompt\":[1,2,3]}", 400, "prompt"),
                new Case("/v1/completions", "{\"model\":\"stories260K\",\"prompt\":\"hi\",\"echo\":true}", 400, "echo"));
        for (Case c : cases) {
            HttpResponse<String> res = live.post(c.path(), c.body());
            String where = c.path() + " " + (c.body().length() > 200 ? c.body().substring(0, 200) : c.body()) + " → " + res.body();
            assertEquals(c.status(), res.statusCode(), where);
            JsonNode err = ServerHarness.json(res.body()).get("error");
            assertNotNull(err, where);
            assertFalse(err.get("message").asText().isBlank(), where);
            assertEquals(c.status() >= 500 ? "server_error" : "invalid_request_error", err.get("type").asText(), where);
            if (c.param() == null) assertTrue(err.get("param").isNull(), where);
            else assertEquals(c.param(), err.get("param").asText(), where);
            assertTrue(err.has("code"), where);
        }
        // and the server still serves
        HttpResponse<String> ok = live.post("/v1/chat/completions", msg("\"max_tokens\":3"));
        assertEquals(200, ok.statusCode(), ok.body());
    }

    @Test
    void aWrongApiKeyIs401InOpenAiShape() throws Exception {
        try (ServerHarness keyed = ServerHarness.openAiAndAnthropic("sekret")) {
            HttpResponse<String> res = keyed.post("/v1/chat/completions", msg("\"max_tokens\":2"), "Authorization", "Bearer wrong");
            assertEquals(401, res.statusCode());
            assertEquals("invalid_api_key", ServerHarness.json(res.body()).get("error").get("code").asText());
            assertEquals(200, keyed.post("/v1/chat/completions", msg("\"max_tokens\":2"), "Authorization", "Bearer sekret").statusCode());
        }
    }

    private static String msg(String extra) {
        return "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]," + extra + "}";
    }

    static String quote(String s) {
        return dev.forkpoint.server.Json.write(s);
    }

    /** The JSON payloads of an SSE body's {@code data:} events, checking it ends with {@code data: [DONE]}. */
    static List<JsonNode> sse(String body) {
        List<JsonNode> out = new ArrayList<>();
        String[] events = body.split("\n\n");
        assertEquals("data: [DONE]", events[events.length - 1].strip(), "the stream must end with [DONE]");
        for (int i = 0; i < events.length - 1; i++) {
            String e = events[i];
            if (e.startsWith(":")) continue;
            assertTrue(e.startsWith("data: "), "not a data event: " + e);
            out.add(ServerHarness.json(e.substring(6)));
        }
        return out;
    }
}
