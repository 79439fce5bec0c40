package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ChatTemplate;
import dev.forkpoint.chat.ToolCall;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Tool calls end to end, on stories260K with Qwen2.5's template ({@link TemplateModel}).
 *
 * <p>Replies: the tiny model never writes a tool call, so the engine's logits follow a script ({@link
 * dev.forkpoint.engine.EngineProbe#script}): the model "generates" {@value #REPLY} token by token, then EOS; the
 * tokens go through the real sampler, detokenizer, template parser and API mapping. Each API must map the parsed call
 * to its own shape, streamed and not.
 *
 * <p>Prompts: tools and a history with an assistant tool call and the tool's result, sent in each API's shape, must
 * render exactly as the Qwen template renders the equivalent messages (rendered here from the test resource): same
 * prompt token count, same greedy output.
 */
class ToolCallsTest {
    static final String REPLY = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    static final String TOOL_SCHEMA = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}";
    static final String QUESTION = "What is the weather in Paris?";
    static final String RESULT = "18 C and sunny";

    @TempDir
    static Path dir;
    static ServerHarness h;
    static Tokenizer tokenizer;

    @BeforeAll
    static void start() throws Exception {
        h = ServerHarness.allApis(ServerHarness.config(), TemplateModel.write(dir));
        tokenizer = h.reference().tokenizer();
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    @AfterEach
    void unscript() {
        h.probe().script(null);
    }

    static String q(String s) { return OllamaApiTest.quote(s); }

    /** Makes the model's next reply {@link #REPLY}. */
    static void scriptToolCall() {
        int[] text = tokenizer.encode(REPLY, false, false);
        int[] ids = Arrays.copyOf(text, text.length + 1);
        ids[text.length] = tokenizer.eosId();
        assertEquals(REPLY, tokenizer.decode(text).strip(), "the vocabulary can spell the reply");
        h.probe().script(ids);
    }

    static void isTheCall(JsonNode arguments) {
        assertEquals(ServerHarness.JSON.createObjectNode().put("city", "Paris"), arguments);
    }

    // ---- replies ----

    @Test
    void ollamaReportsMessageToolCalls() throws Exception {
        String body = "{\"model\":\"" + TemplateModel.FILE + "\",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":100},"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather of a city\",\"parameters\":" + TOOL_SCHEMA + "}}]}";
        for (boolean stream : new boolean[] {false, true}) {
            scriptToolCall();
            JsonNode done;
            if (stream) {
                List<JsonNode> lines = h.postLines("/api/chat", body.replace("\"stream\":false", "\"stream\":true"));
                for (JsonNode l : lines.subList(0, lines.size() - 1)) {
                    assertFalse(l.path("message").path("content").asText().contains("<tool_call>"), "call text is not streamed as content: " + l);
                }
                done = lines.getLast();
            } else {
                done = h.postJson("/api/chat", body);
            }
            assertTrue(done.get("done").asBoolean());
            JsonNode message = done.get("message");
            assertEquals("assistant", message.get("role").asText());
            assertEquals("Let me check.", message.get("content").asText().strip(), "stream " + stream);
            JsonNode calls = message.get("tool_calls");
            assertEquals(1, calls.size(), message.toString());
            assertEquals("get_weather", calls.get(0).get("function").get("name").asText());
            assertTrue(calls.get(0).get("function").get("arguments").isObject(), "Ollama's arguments are an object");
            isTheCall(calls.get(0).get("function").get("arguments"));
        }
    }

    @Test
    void openAiReportsToolCallsWithStringArgumentsAndFinishReasonToolCalls() throws Exception {
        String body = "{\"model\":\"" + TemplateModel.FILE + "\",\"temperature\":0,\"max_tokens\":100,"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":" + TOOL_SCHEMA + "}}]}";
        scriptToolCall();
        JsonNode choice = h.postJson("/v1/chat/completions", body).get("choices").get(0);
        assertEquals("tool_calls", choice.get("finish_reason").asText());
        assertEquals("Let me check.", choice.get("message").get("content").asText().strip());
        JsonNode call = choice.get("message").get("tool_calls").get(0);
        assertTrue(call.get("id").isTextual() && !call.get("id").asText().isEmpty(), call.toString());
        assertEquals("function", call.get("type").asText());
        assertEquals("get_weather", call.get("function").get("name").asText());
        assertTrue(call.get("function").get("arguments").isTextual(), "OpenAI's arguments are a JSON string");
        isTheCall(ServerHarness.json(call.get("function").get("arguments").asText()));

        scriptToolCall();
        List<ServerHarness.Sse> events = h.postSse("/v1/chat/completions", body.replaceFirst("\\{", "{\"stream\":true,"));
        assertEquals("[DONE]", events.getLast().data());
        List<JsonNode> callDeltas = new ArrayList<>();
        StringBuilder content = new StringBuilder();
        String finish = null;
        for (ServerHarness.Sse e : events.subList(0, events.size() - 1)) {
            JsonNode c = e.json().get("choices").get(0);
            content.append(c.get("delta").path("content").asText(""));
            if (c.get("delta").has("tool_calls")) c.get("delta").get("tool_calls").forEach(callDeltas::add);
            if (!c.get("finish_reason").isNull()) finish = c.get("finish_reason").asText();
        }
        assertEquals("tool_calls", finish);
        assertEquals("Let me check.", content.toString().strip(), "no call text in the streamed content");
        assertEquals(1, callDeltas.size(), callDeltas.toString());
        JsonNode d = callDeltas.getFirst();
        assertEquals(0, d.get("index").asInt());
        assertTrue(d.get("id").isTextual() && !d.get("id").asText().isEmpty());
        assertEquals("function", d.get("type").asText());
        assertEquals("get_weather", d.get("function").get("name").asText());
        isTheCall(ServerHarness.json(d.get("function").get("arguments").asText()));
    }

    @Test
    void anthropicReportsToolUseBlocksAndStopReasonToolUse() throws Exception {
        String body = "{\"model\":\"" + TemplateModel.FILE + "\",\"temperature\":0,\"max_tokens\":100,"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "}],"
                + "\"tools\":[{\"name\":\"get_weather\",\"description\":\"Weather of a city\",\"input_schema\":" + TOOL_SCHEMA + "}]}";
        scriptToolCall();
        JsonNode msg = h.postJson("/v1/messages", body);
        assertEquals("tool_use", msg.get("stop_reason").asText());
        JsonNode content = msg.get("content");
        assertEquals(2, content.size(), content.toString());
        assertEquals("text", content.get(0).get("type").asText());
        assertEquals("Let me check.", content.get(0).get("text").asText().strip());
        JsonNode use = content.get(1);
        assertEquals("tool_use", use.get("type").asText());
        assertTrue(use.get("id").asText().startsWith("toolu_"), use.toString());
        assertEquals("get_weather", use.get("name").asText());
        isTheCall(use.get("input"));

        scriptToolCall();
        List<ServerHarness.Sse> events = h.postSse("/v1/messages", body.replaceFirst("\\{", "{\"stream\":true,"));
        JsonNode toolStart = null;
        StringBuilder partialJson = new StringBuilder();
        String stopReason = null;
        for (ServerHarness.Sse e : events) {
            JsonNode d = e.json();
            switch (e.event()) {
                case "content_block_start" -> {
                    if (d.get("content_block").get("type").asText().equals("tool_use")) toolStart = d;
                }
                case "content_block_delta" -> {
                    if (toolStart != null && d.get("index").equals(toolStart.get("index"))) {
                        assertEquals("input_json_delta", d.get("delta").get("type").asText());
                        partialJson.append(d.get("delta").get("partial_json").asText());
                    } else {
                        assertFalse(d.get("delta").path("text").asText().contains("<tool_call>"), "call text is not streamed as text");
                    }
                }
                case "message_delta" -> stopReason = d.get("delta").get("stop_reason").asText();
                case "error" -> throw new AssertionError(e.data());
                default -> { }
            }
        }
        assertTrue(toolStart != null, "a tool_use block starts: " + events);
        assertEquals(1, toolStart.get("index").asInt(), "after the text block");
        JsonNode block = toolStart.get("content_block");
        assertTrue(block.get("id").asText().startsWith("toolu_"));
        assertEquals("get_weather", block.get("name").asText());
        assertEquals(ServerHarness.JSON.createObjectNode(), block.get("input"), "input arrives as deltas");
        isTheCall(ServerHarness.json(partialJson.toString()));
        assertEquals("tool_use", stopReason);
        assertEquals("message_stop", events.getLast().event());
    }

    // ---- prompts ----

    static final ToolDefinition WEATHER = new ToolDefinition("get_weather", "Weather of a city", ServerHarness.json(TOOL_SCHEMA));

    /** The history every API sends in its own shape: the question, the assistant's call, the tool's result. */
    static List<ChatMessage> history(String callId) {
        return List.of(ChatMessage.of("user", QUESTION),
                new ChatMessage("assistant", "", List.of(new ToolCall(callId, "get_weather", ServerHarness.json("{\"city\":\"Paris\"}"))), null, null),
                new ChatMessage("tool", RESULT, List.of(), callId, "get_weather"));
    }

    /** The prompt as the Qwen template (the resource, not the model file) renders it. */
    static String expectedPrompt(List<ChatMessage> messages, List<ToolDefinition> tools) {
        return ChatTemplate.of(TemplateModel.qwenTemplate(), tokenizer).render(messages, tools, true).prompt();
    }

    @Test
    void toolsAndAToolCallHistoryReachThePromptInEveryApi() throws Exception {
        String prompt = expectedPrompt(history("call_1"), List.of(WEATHER));
        assertTrue(prompt.contains("\"get_weather\"") && prompt.contains("<tool_response>\n" + RESULT) && prompt.contains("<tool_call>\n{\"name\": \"get_weather\""),
                "the template renders tools, the call and its result:\n" + prompt);
        int tokens = h.tokens(prompt).length;
        String expected = h.greedy(prompt, 6).text().strip();
        String m = "\"model\":\"" + TemplateModel.FILE + "\"";

        JsonNode ollama = h.postJson("/api/chat", "{" + m + ",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":6},"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather of a city\",\"parameters\":" + TOOL_SCHEMA + "}}],"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "},"
                + "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}}]},"
                + "{\"role\":\"tool\",\"content\":" + q(RESULT) + ",\"tool_name\":\"get_weather\"}]}");
        assertEquals(tokens, ollama.get("prompt_eval_count").asInt() + ollama.get("prompt_cache_count").asInt(), "Ollama prompt tokens");
        assertEquals(expected, ollama.get("message").get("content").asText().strip());

        JsonNode openai = h.postJson("/v1/chat/completions", "{" + m + ",\"temperature\":0,\"max_tokens\":6,"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather of a city\",\"parameters\":" + TOOL_SCHEMA + "}}],"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "},"
                + "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":" + q("{\"city\":\"Paris\"}") + "}}]},"
                + "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":" + q(RESULT) + "}]}");
        assertEquals(tokens, openai.get("usage").get("prompt_tokens").asInt(), "OpenAI prompt tokens");
        assertEquals(expected, openai.get("choices").get(0).get("message").get("content").asText().strip());

        String anthropicMessages = "\"tools\":[{\"name\":\"get_weather\",\"description\":\"Weather of a city\",\"input_schema\":" + TOOL_SCHEMA + "}],"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "},"
                + "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},"
                + "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":" + q(RESULT) + "}]}]";
        JsonNode anthropic = h.postJson("/v1/messages", "{" + m + ",\"temperature\":0,\"max_tokens\":6," + anthropicMessages + "}");
        JsonNode usage = anthropic.get("usage");
        assertEquals(tokens, usage.get("input_tokens").asInt() + usage.get("cache_read_input_tokens").asInt(), "Anthropic prompt tokens");
        assertEquals(expected, anthropic.get("content").get(0).get("text").asText().strip());
        assertEquals(tokens, h.postJson("/v1/messages/count_tokens", "{" + m + "," + anthropicMessages + "}").get("input_tokens").asInt());

        // the tools alone grow the prompt by exactly their rendering
        String noTools = "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "}]}";
        String withTools = "{" + m + ",\"tools\":[{\"name\":\"get_weather\",\"description\":\"Weather of a city\",\"input_schema\":" + TOOL_SCHEMA + "}],"
                + "\"messages\":[{\"role\":\"user\",\"content\":" + q(QUESTION) + "}]}";
        int without = h.postJson("/v1/messages/count_tokens", noTools).get("input_tokens").asInt();
        int with = h.postJson("/v1/messages/count_tokens", withTools).get("input_tokens").asInt();
        List<ChatMessage> question = List.of(ChatMessage.of("user", QUESTION));
        assertEquals(h.tokens(expectedPrompt(question, List.of())).length, without);
        assertEquals(h.tokens(expectedPrompt(question, List.of(WEATHER))).length, with);
        assertTrue(with > without);
    }
}
