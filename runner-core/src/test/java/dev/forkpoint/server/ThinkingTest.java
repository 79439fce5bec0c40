package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ChatTemplate;
import dev.forkpoint.chat.ThinkMode;
import dev.forkpoint.chat.ToolCall;
import dev.forkpoint.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Thinking end to end on every API, streamed and not: stories260K with Qwen3's chat template ({@link TemplateModel};
 * its declared context raised to 4096 so that Anthropic's budget rules can be met). The tiny model never thinks, so
 * the engine's logits follow a script ({@link dev.forkpoint.engine.EngineProbe#script}): it "generates" a reply with
 * a {@code <think>} block token by token (the tags are spelled in several tokens, so they arrive split), which goes
 * through the real sampler, detokenizer, thinking parser and API mapping. Prompts are compared by their token count
 * with Qwen3's template rendered here (think on, off; thinking in the history).
 */
class ThinkingTest {
    static final String THINKING = "The user greets me.";
    static final String ANSWER = "Hello there!";
    static final String REPLY = "<think>\n" + THINKING + "\n</think>\n\n" + ANSWER;
    static final String FILE = "stories260K-qwen3-template.gguf";

    @TempDir
    static Path dir;
    static ServerHarness h;      // Qwen3's template: thinks
    static ServerHarness plain;  // Qwen2.5's template: cannot think
    static final String PLAIN = "stories260K-qwen25-4k.gguf";
    static Tokenizer tokenizer;

    @BeforeAll
    static void start() throws Exception {
        h = ServerHarness.allApis(ServerHarness.config(), TemplateModel.write(dir, FILE, TemplateModel.qwen3Template(), 4096));
        plain = ServerHarness.allApis(ServerHarness.config(), TemplateModel.write(dir, PLAIN, TemplateModel.qwenTemplate(), 4096));
        tokenizer = h.reference().tokenizer();
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
        if (plain != null) plain.close();
    }

    @AfterEach
    void unscript() {
        h.probe().script(null);
    }

    static String q(String s) { return OllamaApiTest.quote(s); }

    /** The token ids that spell {@code text}, then EOS. */
    static int[] scriptIds(Tokenizer tokenizer, String text) {
        int[] ids = tokenizer.encode(text, false, false);
        assertEquals(text, tokenizer.decode(ids).strip(), "the vocabulary can spell the reply");
        int[] out = Arrays.copyOf(ids, ids.length + 1);
        out[ids.length] = tokenizer.eosId();
        return out;
    }

    /** Makes the model's next reply {@code text}. */
    static void script(String text) {
        h.probe().script(scriptIds(tokenizer, text));
    }

    static String ollamaChat(String extra, boolean stream) {
        return "{\"model\":\"" + FILE + "\",\"stream\":" + stream + ",\"options\":{\"temperature\":0,\"num_predict\":200},"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]" + extra + "}";
    }

    /** Streamed pieces of one field, in order, and where each field's pieces sit. */
    record Streamed(List<String> thinking, List<String> content, int lastThinking, int firstContent) {
        String thinkingText() { return String.join("", thinking); }

        String contentText() { return String.join("", content); }

        /** Thinking came in several pieces, all before the answer, and no piece shows a tag. */
        void wellFormed() {
            assertTrue(thinking.size() >= 2, "thinking streamed as it is generated: " + thinking);
            assertTrue(firstContent < 0 || lastThinking < firstContent, "thinking before the answer: " + this);
            for (String p : thinking) assertFalse(p.contains("<think") || p.contains("</think"), "a tag in a thinking piece: " + p);
            for (String p : content) assertFalse(p.contains("<think") || p.contains("</think"), "a tag in an answer piece: " + p);
        }
    }

    static Streamed collect(List<JsonNode> chunks, String thinkingPath, String contentPath) {
        List<String> thinking = new ArrayList<>(), content = new ArrayList<>();
        int lastThinking = -1, firstContent = -1;
        for (int i = 0; i < chunks.size(); i++) {
            String t = at(chunks.get(i), thinkingPath), c = at(chunks.get(i), contentPath);
            if (!t.isEmpty()) {
                thinking.add(t);
                lastThinking = i;
            }
            if (!c.isEmpty()) {
                content.add(c);
                if (firstContent < 0) firstContent = i;
            }
        }
        return new Streamed(thinking, content, lastThinking, firstContent);
    }

    static String at(JsonNode n, String path) {
        for (String f : path.split("\\.")) n = f.matches("\\d+") ? n.path(Integer.parseInt(f)) : n.path(f);
        return n.asText("");
    }

    // ---- Ollama ----

    @Test
    void ollamaChatReturnsMessageThinking() throws Exception {
        for (String think : new String[] {"", ",\"think\":true", ",\"think\":\"high\""}) {
            script(REPLY);
            JsonNode message = h.postJson("/api/chat", ollamaChat(think, false)).get("message");
            assertEquals(THINKING, message.path("thinking").asText(), think + ": " + message);
            assertEquals(ANSWER, message.get("content").asText(), think);

            script(REPLY);
            List<JsonNode> lines = h.postLines("/api/chat", ollamaChat(think, true));
            Streamed s = collect(lines, "message.thinking", "message.content");
            s.wellFormed();
            assertEquals(THINKING, s.thinkingText(), think);
            assertEquals(ANSWER, s.contentText(), think);
            assertTrue(lines.getLast().get("done").asBoolean());
        }
    }

    @Test
    void ollamaGenerateReturnsThinking() throws Exception {
        String body = "{\"model\":\"" + FILE + "\",\"prompt\":\"Hi\",\"think\":true,\"options\":{\"temperature\":0},\"stream\":";
        script(REPLY);
        JsonNode done = h.postJson("/api/generate", body + "false}");
        assertEquals(THINKING, done.path("thinking").asText(), done.toString());
        assertEquals(ANSWER, done.get("response").asText());
        script(REPLY);
        Streamed s = collect(h.postLines("/api/generate", body + "true}"), "thinking", "response");
        s.wellFormed();
        assertEquals(THINKING, s.thinkingText());
        assertEquals(ANSWER, s.contentText());
    }

    @Test
    void showListsTheThinkingCapability() throws Exception {
        JsonNode caps = h.postJson("/api/show", "{\"model\":\"" + FILE + "\"}").get("capabilities");
        assertTrue(caps.toString().contains("\"thinking\""), caps.toString());
        JsonNode none = plain.postJson("/api/show", "{\"model\":\"" + PLAIN + "\"}").get("capabilities");
        assertFalse(none.toString().contains("\"thinking\""), none.toString());
    }

    /** The prompt's token count as the server reports it, per API. */
    static int promptTokens(String path, JsonNode r) {
        return switch (path) {
            case "/api/chat" -> r.get("prompt_eval_count").asInt() + r.get("prompt_cache_count").asInt();
            case "/v1/chat/completions" -> r.get("usage").get("prompt_tokens").asInt();
            default -> r.get("usage").get("input_tokens").asInt() + r.get("usage").get("cache_read_input_tokens").asInt();
        };
    }

    static int renderedTokens(List<ChatMessage> messages, ThinkMode think) {
        ChatTemplate t = ChatTemplate.of(TemplateModel.qwen3Template(), tokenizer);
        return h.tokens(t.render(messages, List.of(), true, think).prompt()).length;
    }

    @Test
    void thinkingOffRendersTheEmptyBlockAndLeavesTheOutputAlone() throws Exception {
        List<ChatMessage> hi = List.of(ChatMessage.of("user", "Hi"));
        int off = renderedTokens(hi, ThinkMode.OFF), on = renderedTokens(hi, ThinkMode.DEFAULT);
        assertNotEquals(off, on, "think false changes the prompt");
        String[][] requests = {
                {"/api/chat", ollamaChat(",\"think\":false", false)},
                {"/v1/chat/completions", "{\"model\":\"" + FILE + "\",\"temperature\":0,\"reasoning_effort\":\"none\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"},
                {"/v1/chat/completions", "{\"model\":\"" + FILE + "\",\"temperature\":0,\"reasoning\":{\"effort\":\"none\"},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"},
                {"/v1/messages", "{\"model\":\"" + FILE + "\",\"max_tokens\":200,\"temperature\":0,\"thinking\":{\"type\":\"disabled\"},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"},
        };
        for (String[] r : requests) {
            script(REPLY);
            JsonNode body = h.postJson(r[0], r[1]);
            assertEquals(off, promptTokens(r[0], body), r[0] + " " + r[1]);
            // thinking off: the output is not searched for a block (as Ollama does), it is all content
            String text = switch (r[0]) {
                case "/api/chat" -> body.get("message").get("content").asText();
                case "/v1/chat/completions" -> body.get("choices").get(0).get("message").get("content").asText();
                default -> body.get("content").get(0).get("text").asText();
            };
            assertEquals(REPLY, text.strip(), r[0]);
            assertFalse(body.toString().contains("\"thinking\":\"" + THINKING) || body.toString().contains("reasoning_content"), body.toString());
        }
        for (String path : new String[] {"/api/chat", "/v1/chat/completions", "/v1/messages"}) {
            script(REPLY);
            String req = path.equals("/api/chat") ? ollamaChat("", false)
                    : path.equals("/v1/messages") ? "{\"model\":\"" + FILE + "\",\"max_tokens\":200,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"
                    : "{\"model\":\"" + FILE + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
            assertEquals(on, promptTokens(path, h.postJson(path, req)), path + ": absent = the model's default (thinking)");
        }
    }

    /**
     * A grammar decides a constrained reply from its first token: a thinking model renders with thinking off (its
     * template closes the empty block in the prompt) and the reply is the constrained content, with no thinking field;
     * asking for thinking beside a grammar is refused naming the thinking field, on every API.
     */
    @Test
    void aConstrainedReplyHoldsNoThinking() throws Exception {
        String schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"}},\"required\":[\"a\"]}";
        String hi = "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]";
        script(REPLY);
        JsonNode m = h.postJson("/api/chat", "{\"model\":\"" + FILE + "\",\"stream\":false,\"format\":" + schema + ","
                + "\"options\":{\"temperature\":0,\"num_predict\":40}," + hi + "}").get("message");
        assertFalse(m.has("thinking"), m.toString());
        assertTrue(ServerHarness.json(m.get("content").asText()).get("a").isBoolean(), m.toString());
        HttpResponse<String> r = h.post("/api/chat", "{\"model\":\"" + FILE + "\",\"think\":true,\"format\":\"json\"," + hi + "}");
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains("think cannot be combined with format"), r.body());
        r = h.post("/v1/chat/completions", "{\"model\":\"" + FILE + "\",\"reasoning_effort\":\"high\","
                + "\"response_format\":{\"type\":\"json_object\"}," + hi + "}");
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("reasoning_effort", ServerHarness.json(r.body()).get("error").get("param").asText(), r.body());
        r = h.post("/v1/messages", "{\"model\":\"" + FILE + "\",\"max_tokens\":2000,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},"
                + "\"tools\":[{\"name\":\"f\",\"input_schema\":" + schema + "}],\"tool_choice\":{\"type\":\"any\"}," + hi + "}");
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains("thinking cannot be combined with a forced tool_choice"), r.body());
    }

    @Test
    void aModelThatCannotThink() throws Exception {
        HttpResponse<String> r = plain.post("/api/chat", "{\"model\":\"" + PLAIN + "\",\"think\":true,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains("\\\"" + PLAIN) && r.body().contains("does not support thinking"), r.body());
        r = plain.post("/api/generate", "{\"model\":\"" + PLAIN + "\",\"think\":\"low\",\"prompt\":\"Hi\"}");
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains("does not support thinking"), r.body());
        r = plain.post("/v1/chat/completions", "{\"model\":\"" + PLAIN + "\",\"reasoning_effort\":\"high\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("reasoning_effort", ServerHarness.json(r.body()).get("error").get("param").asText(), r.body());
        // off, or not asked: fine
        JsonNode ok = plain.postJson("/api/chat", "{\"model\":\"" + PLAIN + "\",\"think\":false,\"stream\":false,\"options\":{\"num_predict\":3},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
        assertFalse(ok.get("message").has("thinking"), ok.toString());
        // Anthropic: enabled is relaxed, as Ollama does for this API; there is simply no thinking block
        JsonNode msg = plain.postJson("/v1/messages", "{\"model\":\"" + PLAIN + "\",\"max_tokens\":2000,"
                + "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
        for (JsonNode b : msg.get("content")) assertNotEquals("thinking", b.get("type").asText(), msg.toString());
    }

    @Test
    void badThinkingValuesAreRefusedNamingTheField() throws Exception {
        String user = "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]";
        String[][] cases = {
                {"/api/chat", "{\"model\":\"" + FILE + "\",\"think\":\"very\"," + user + "}", "think"},
                {"/api/chat", "{\"model\":\"" + FILE + "\",\"think\":1," + user + "}", "think"},
                {"/v1/chat/completions", "{\"model\":\"" + FILE + "\",\"reasoning_effort\":\"extreme\"," + user + "}", "reasoning_effort"},
                {"/v1/chat/completions", "{\"model\":\"" + FILE + "\",\"reasoning\":{\"effort\":3}," + user + "}", "reasoning.effort"},
                {"/v1/messages", "{\"model\":\"" + FILE + "\",\"max_tokens\":2000,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":100}," + user + "}", "budget_tokens"},
                {"/v1/messages", "{\"model\":\"" + FILE + "\",\"max_tokens\":1024,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}," + user + "}", "max_tokens"},
                {"/v1/messages", "{\"model\":\"" + FILE + "\",\"max_tokens\":2000,\"thinking\":{\"type\":\"enabled\"}," + user + "}", "budget_tokens"},
                {"/v1/messages", "{\"model\":\"" + FILE + "\",\"max_tokens\":2000,\"thinking\":{\"type\":\"sometimes\"}," + user + "}", "thinking.type"},
        };
        for (String[] c : cases) {
            HttpResponse<String> r = h.post(c[0], c[1]);
            assertEquals(400, r.statusCode(), c[1] + " → " + r.body());
            assertTrue(r.body().contains(c[2]), c[1] + " → " + r.body());
        }
    }

    // ---- OpenAI ----

    @Test
    void openAiReturnsReasoningContent() throws Exception {
        for (String effort : new String[] {"", ",\"reasoning_effort\":\"low\"", ",\"reasoning\":{\"effort\":\"high\"}"}) {
            String body = "{\"model\":\"" + FILE + "\",\"temperature\":0" + effort + ",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
            script(REPLY);
            JsonNode choice = h.postJson("/v1/chat/completions", body).get("choices").get(0);
            assertEquals(THINKING, choice.get("message").path("reasoning_content").asText(), choice.toString());
            assertEquals(THINKING, choice.get("message").path("reasoning").asText(), "Ollama's field too");
            assertEquals(ANSWER, choice.get("message").get("content").asText());
            assertEquals("stop", choice.get("finish_reason").asText());

            script(REPLY);
            List<ServerHarness.Sse> events = h.postSse("/v1/chat/completions", body.replaceFirst("\\{", "{\"stream\":true,"));
            assertEquals("[DONE]", events.getLast().data());
            List<JsonNode> chunks = new ArrayList<>();
            for (ServerHarness.Sse e : events.subList(0, events.size() - 1)) chunks.add(e.json());
            Streamed s = collect(chunks, "choices.0.delta.reasoning_content", "choices.0.delta.content");
            s.wellFormed();
            assertEquals(THINKING, s.thinkingText());
            assertEquals(ANSWER, s.contentText());
            assertEquals(THINKING, String.join("", collect(chunks, "choices.0.delta.reasoning", "x").thinking()));
        }
    }

    // ---- Anthropic ----

    @Test
    void anthropicReturnsThinkingBlocks() throws Exception {
        for (String thinking : new String[] {",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}", ""}) {
            String body = "{\"model\":\"" + FILE + "\",\"max_tokens\":2000,\"temperature\":0" + thinking
                    + ",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
            script(REPLY);
            JsonNode msg = h.postJson("/v1/messages", body);
            JsonNode content = msg.get("content");
            assertEquals(2, content.size(), msg.toString());
            assertEquals("thinking", content.get(0).get("type").asText());
            assertEquals(THINKING, content.get(0).get("thinking").asText());
            assertTrue(content.get(0).get("signature").isTextual(), "a signature field (empty: Forkpoint signs nothing)");
            assertEquals("text", content.get(1).get("type").asText());
            assertEquals(ANSWER, content.get(1).get("text").asText());
            assertEquals("end_turn", msg.get("stop_reason").asText());

            script(REPLY);
            List<ServerHarness.Sse> events = h.postSse("/v1/messages", body.replaceFirst("\\{", "{\"stream\":true,"));
            List<String> order = new ArrayList<>();
            StringBuilder thought = new StringBuilder(), text = new StringBuilder();
            int thoughtDeltas = 0;
            for (ServerHarness.Sse e : events) {
                JsonNode d = e.json();
                switch (e.event()) {
                    case "content_block_start" -> order.add("start " + d.get("index").asInt() + " " + d.get("content_block").get("type").asText());
                    case "content_block_stop" -> order.add("stop " + d.get("index").asInt());
                    case "content_block_delta" -> {
                        String type = d.get("delta").get("type").asText();
                        if (type.equals("thinking_delta")) {
                            assertEquals(0, d.get("index").asInt());
                            thought.append(d.get("delta").get("thinking").asText());
                            thoughtDeltas++;
                        } else if (type.equals("text_delta")) {
                            assertEquals(1, d.get("index").asInt());
                            text.append(d.get("delta").get("text").asText());
                        } else {
                            assertEquals("signature_delta", type, d.toString());
                        }
                    }
                    case "error" -> throw new AssertionError(e.data());
                    default -> { }
                }
            }
            assertEquals(List.of("start 0 thinking", "stop 0", "start 1 text", "stop 1"), order);
            assertTrue(thoughtDeltas >= 2, "thinking streamed as it is generated");
            assertEquals(THINKING, thought.toString());
            assertEquals(ANSWER, text.toString());
            assertEquals("message_stop", events.getLast().event());
        }
    }

    @Test
    void anthropicBudgetTokensCapsTheThinking() throws Exception {
        String thought = "x ".repeat(1100).strip();
        String reply = "<think>\n" + thought + "\n</think>\n\nDone.";
        String body = "{\"model\":\"" + FILE + "\",\"max_tokens\":3000,\"temperature\":0,"
                + "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
        script(reply);
        JsonNode content = h.postJson("/v1/messages", body).get("content");
        String thinking = content.get(0).get("thinking").asText();
        int tokens = tokenizer.encode("<think>\n" + thinking, false, false).length;
        assertTrue(tokens > 1000 && tokens <= 1024, "the engine closed the block at 1024 tokens: " + tokens + " tokens thought");
        assertTrue(thought.startsWith(thinking) && thinking.length() < thought.length(), "cut short");
        assertEquals("text", content.get(1).get("type").asText());
        assertTrue(content.get(1).get("text").asText().endsWith("Done."), "the reply goes on after the forced close");

        script(reply);
        StringBuilder streamed = new StringBuilder();
        for (ServerHarness.Sse e : h.postSse("/v1/messages", body.replaceFirst("\\{", "{\"stream\":true,"))) {
            JsonNode d = e.json();
            if (e.event().equals("content_block_delta") && d.get("delta").get("type").asText().equals("thinking_delta")) {
                streamed.append(d.get("delta").get("thinking").asText());
            }
        }
        assertEquals(thinking, streamed.toString());

        script(reply);   // without a budget the model thinks as long as it does
        JsonNode free = h.postJson("/v1/messages", body.replace(",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}", ""));
        assertEquals(thought, free.get("content").get(0).get("thinking").asText());
    }

    // ---- thinking, then a tool call ----

    static final String TOOL_SCHEMA = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}";
    static final String CALL_REPLY = "<think>\nI need the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

    @Test
    void thinkingThenToolCallOnEveryApi() throws Exception {
        String user = "\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}]";
        String ollama = "{\"model\":\"" + FILE + "\",\"options\":{\"temperature\":0}," + user
                + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":" + TOOL_SCHEMA + "}}],\"stream\":";
        for (boolean stream : new boolean[] {false, true}) {
            script(CALL_REPLY);
            JsonNode message;
            if (stream) {
                List<JsonNode> lines = h.postLines("/api/chat", ollama + "true}");
                Streamed s = collect(lines, "message.thinking", "message.content");
                assertEquals("I need the weather.", s.thinkingText());
                assertTrue(lines.size() > 2 && lines.get(0).get("message").has("thinking"), "thinking streams before the call: " + lines);
                message = lines.getLast().get("message");
            } else {
                message = h.postJson("/api/chat", ollama + "false}").get("message");
                assertEquals("I need the weather.", message.get("thinking").asText());
            }
            assertEquals("", message.get("content").asText(), message.toString());
            assertEquals("get_weather", message.get("tool_calls").get(0).get("function").get("name").asText());
        }

        String openai = "{\"model\":\"" + FILE + "\",\"temperature\":0," + user
                + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":" + TOOL_SCHEMA + "}}]}";
        script(CALL_REPLY);
        JsonNode choice = h.postJson("/v1/chat/completions", openai).get("choices").get(0);
        assertEquals("tool_calls", choice.get("finish_reason").asText());
        assertEquals("I need the weather.", choice.get("message").get("reasoning_content").asText());
        assertEquals("get_weather", choice.get("message").get("tool_calls").get(0).get("function").get("name").asText());
        script(CALL_REPLY);
        List<JsonNode> chunks = new ArrayList<>();
        for (ServerHarness.Sse e : h.postSse("/v1/chat/completions", openai.replaceFirst("\\{", "{\"stream\":true,"))) {
            if (!e.data().equals("[DONE]")) chunks.add(e.json());
        }
        assertEquals("I need the weather.", collect(chunks, "choices.0.delta.reasoning_content", "choices.0.delta.content").thinkingText());
        assertTrue(chunks.stream().anyMatch(c -> c.get("choices").get(0).get("delta").has("tool_calls")), chunks.toString());

        String anthropic = "{\"model\":\"" + FILE + "\",\"max_tokens\":2000,\"temperature\":0," + user
                + ",\"tools\":[{\"name\":\"get_weather\",\"input_schema\":" + TOOL_SCHEMA + "}]}";
        script(CALL_REPLY);
        JsonNode msg = h.postJson("/v1/messages", anthropic);
        assertEquals("tool_use", msg.get("stop_reason").asText());
        JsonNode content = msg.get("content");
        assertEquals(2, content.size(), msg.toString());
        assertEquals("thinking", content.get(0).get("type").asText());
        assertEquals("I need the weather.", content.get(0).get("thinking").asText());
        assertEquals("tool_use", content.get(1).get("type").asText());
        script(CALL_REPLY);
        List<String> order = new ArrayList<>();
        for (ServerHarness.Sse e : h.postSse("/v1/messages", anthropic.replaceFirst("\\{", "{\"stream\":true,"))) {
            if (e.event().equals("content_block_start")) order.add(e.json().get("content_block").get("type").asText() + " " + e.json().get("index").asInt());
        }
        assertEquals(List.of("thinking 0", "tool_use 1"), order);
    }

    // ---- the prompt opens the block ----

    @Test
    void promptThatOpensTheBlock() throws Exception {
        String file = "stories260K-qwen35-style.gguf";
        try (ServerHarness opened = ServerHarness.allApis(ServerHarness.config(),
                TemplateModel.write(dir, file, TemplateModel.opensThinkingTemplate(), 0))) {
            String reply = THINKING + "\n</think>\n\n" + ANSWER;   // the prompt wrote <think>
            String body = "{\"model\":\"" + file + "\",\"options\":{\"temperature\":0},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"stream\":";
            opened.probe().script(scriptIds(tokenizer, reply));
            JsonNode message = opened.postJson("/api/chat", body + "false}").get("message");
            assertEquals(THINKING, message.get("thinking").asText(), message.toString());
            assertEquals(ANSWER, message.get("content").asText());
            opened.probe().script(scriptIds(tokenizer, reply));
            Streamed s = collect(opened.postLines("/api/chat", body + "true}"), "message.thinking", "message.content");
            s.wellFormed();
            assertEquals(THINKING, s.thinkingText());
            assertEquals(ANSWER, s.contentText());
            opened.probe().script(scriptIds(tokenizer, reply));
            JsonNode choice = opened.postJson("/v1/chat/completions", "{\"model\":\"" + file + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}")
                    .get("choices").get(0);
            assertEquals(THINKING, choice.get("message").get("reasoning_content").asText());
            assertEquals(ANSWER, choice.get("message").get("content").asText());
        }
    }

    // ---- stop strings and log-probabilities ----

    @Test
    void stopStringsCutThinkingOrAnswer() throws Exception {
        script(REPLY);
        JsonNode done = h.postJson("/api/chat", ollamaChat(",\"think\":true", false).replace("\"num_predict\":200", "\"num_predict\":200,\"stop\":[\"there\"]"));
        assertEquals("stop", done.get("done_reason").asText());
        assertEquals(THINKING, done.get("message").get("thinking").asText());
        assertEquals("Hello", done.get("message").get("content").asText().strip());

        script(REPLY);
        done = h.postJson("/api/chat", ollamaChat("", false).replace("\"num_predict\":200", "\"num_predict\":200,\"stop\":[\"greets\"]"));
        assertEquals("The user", done.get("message").get("thinking").asText(), "no closing tag: all thinking");
        assertEquals("", done.get("message").get("content").asText());

        script(REPLY);
        List<JsonNode> lines = h.postLines("/api/chat", ollamaChat("", true).replace("\"num_predict\":200", "\"num_predict\":200,\"stop\":[\"greets\"]"));
        assertEquals("The user", collect(lines, "message.thinking", "message.content").thinkingText());
    }

    @Test
    void logprobsCoverThinkingAndAnswer() throws Exception {
        String extra = ",\"logprobs\":true,\"top_logprobs\":2";
        script(REPLY);
        JsonNode done = h.postJson("/api/chat", ollamaChat(extra, false));
        List<JsonNode> whole = new ArrayList<>();
        done.get("logprobs").forEach(whole::add);
        StringBuilder spelled = new StringBuilder();
        for (JsonNode e : whole) spelled.append(e.get("token").asText());
        assertEquals(REPLY, spelled.toString().strip(), "one entry per generated token, thinking and tags included");

        script(REPLY);
        List<JsonNode> streamed = new ArrayList<>();
        List<JsonNode> lines = h.postLines("/api/chat", ollamaChat(extra, true));
        for (JsonNode l : lines) if (l.has("logprobs")) l.get("logprobs").forEach(streamed::add);
        // the alternatives' values of a scripted reply move with the cache state (their logits are the model's own)
        assertEquals(tokens(whole), tokens(streamed), "streamed entries == not streamed");
        collect(lines, "message.thinking", "message.content").wellFormed();

        String openai = "{\"model\":\"" + FILE + "\",\"temperature\":0,\"logprobs\":true,\"top_logprobs\":2,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
        script(REPLY);
        JsonNode content = h.postJson("/v1/chat/completions", openai).get("choices").get(0).get("logprobs").get("content");
        script(REPLY);
        List<JsonNode> openaiStreamed = new ArrayList<>();
        for (ServerHarness.Sse e : h.postSse("/v1/chat/completions", openai.replaceFirst("\\{", "{\"stream\":true,"))) {
            if (e.data().equals("[DONE]")) continue;
            JsonNode lp = e.json().get("choices").get(0).get("logprobs");
            if (lp.isObject()) lp.get("content").forEach(openaiStreamed::add);
        }
        assertEquals(tokens(content), tokens(openaiStreamed));
        assertEquals(tokens(whole), tokens(content));
    }

    /** Each entry's token and its log-probability. */
    static List<String> tokens(Iterable<JsonNode> entries) {
        List<String> out = new ArrayList<>();
        for (JsonNode e : entries) out.add(e.get("token").asText() + "@" + e.get("logprob").asDouble());
        return out;
    }

    // ---- thinking in the history ----

    @Test
    void historyThinkingReachesTheTemplate() throws Exception {
        ToolCall call = new ToolCall("call_1", "get_weather", ServerHarness.JSON.createObjectNode().put("city", "Paris"));
        List<ChatMessage> with = List.of(ChatMessage.of("user", "Weather in Paris?"),
                new ChatMessage("assistant", "Let me check.", List.of(call), null, null, "I need the weather."),
                new ChatMessage("tool", "21", List.of(), "call_1", "get_weather"));
        List<ChatMessage> without = List.of(with.get(0),
                new ChatMessage("assistant", "Let me check.", List.of(call), null, null), with.get(2));
        int want = renderedTokens(with, ThinkMode.DEFAULT);
        assertNotEquals(want, renderedTokens(without, ThinkMode.DEFAULT), "the thinking changes the prompt");

        String ollama = "{\"model\":\"" + FILE + "\",\"stream\":false,\"options\":{\"num_predict\":1},\"messages\":["
                + "{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
                + "{\"role\":\"assistant\",\"content\":\"Let me check.\",\"thinking\":\"I need the weather.\","
                + "\"tool_calls\":[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}}]},"
                + "{\"role\":\"tool\",\"content\":\"21\",\"tool_name\":\"get_weather\"}]}";
        String openai = "{\"model\":\"" + FILE + "\",\"max_tokens\":1,\"messages\":["
                + "{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
                + "{\"role\":\"assistant\",\"content\":\"Let me check.\",\"reasoning_content\":\"I need the weather.\","
                + "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},"
                + "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"21\"}]}";
        String anthropic = "{\"model\":\"" + FILE + "\",\"max_tokens\":1,\"messages\":["
                + "{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
                + "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"I need the weather.\",\"signature\":\"\"},"
                + "{\"type\":\"text\",\"text\":\"Let me check.\"},"
                + "{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},"
                + "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"call_1\",\"content\":\"21\"}]}]}";
        assertEquals(want, promptTokens("/api/chat", h.postJson("/api/chat", ollama)), "Ollama message.thinking");
        assertEquals(want, promptTokens("/v1/chat/completions", h.postJson("/v1/chat/completions", openai)), "OpenAI reasoning_content");
        assertEquals(want, promptTokens("/v1/chat/completions", h.postJson("/v1/chat/completions",
                openai.replace("reasoning_content", "reasoning"))), "OpenAI reasoning (Ollama's name)");
        assertEquals(want, promptTokens("/v1/messages", h.postJson("/v1/messages", anthropic)), "Anthropic thinking block");
    }
}
