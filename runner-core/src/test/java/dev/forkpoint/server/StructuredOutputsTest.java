package dev.forkpoint.server;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Structured outputs on each API, streamed and not, on stories260K with Qwen2.5's template ({@link TemplateModel}):
 * Ollama {@code format} (a schema, "json"), OpenAI {@code response_format} (json_schema, json_object) and a forced
 * {@code tool_choice}, Anthropic's forced {@code tool_choice} ("tool", "any"). Every reply is checked against its schema
 * with an independent validator (networknt); refusals name the field and the keyword.
 */
class StructuredOutputsTest {
    static final String SCHEMA = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},"
            + "\"age\":{\"type\":\"integer\"},\"pet\":{\"enum\":[\"cat\",\"dog\",\"bird\"]},"
            + "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":6},\"minItems\":1,\"maxItems\":2}},"
            + "\"required\":[\"name\",\"age\",\"pet\",\"tags\"],\"additionalProperties\":false}";
    static final String WEATHER = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":10},"
            + "\"unit\":{\"enum\":[\"C\",\"F\"]}},\"required\":[\"city\",\"unit\"]}";
    static final String TIME = "{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":\"string\",\"pattern\":\"^[A-Z][a-z]{1,8}/[A-Z][a-z]{1,8}$\"}},"
            + "\"required\":[\"zone\"],\"additionalProperties\":false}";
    static final ObjectMapper STRICT = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    @TempDir
    static Path dir;
    static ServerHarness h;
    static final String M = "\"model\":\"" + TemplateModel.FILE + "\"";

    @BeforeAll
    static void start() throws Exception {
        h = ServerHarness.allApis(ServerHarness.config(), TemplateModel.write(dir));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    /** The value parsed strictly and validated against the schema; fails the test otherwise. */
    static JsonNode valid(String schema, String text) {
        JsonNode value;
        try {
            value = STRICT.readTree(text);
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + text, e);
        }
        assertNotNull(value, "empty output");
        return valid(schema, value);
    }

    static JsonNode valid(String schema, JsonNode value) {
        Set<ValidationMessage> errors = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012)
                .getSchema(ServerHarness.json(schema)).validate(value);
        assertTrue(errors.isEmpty(), value + " against " + schema + ": " + errors);
        return value;
    }

    static String q(String s) { return OllamaApiTest.quote(s); }

    @Test
    void ollamaFormatSchemaOnGenerateAndChat() throws Exception {
        for (String path : new String[] {"/api/generate", "/api/chat"}) {
            String input = path.equals("/api/generate") ? "\"prompt\":\"Tell me about Lily.\"" : "\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about Lily.\"}]";
            String body = "{" + M + "," + input + ",\"format\":" + SCHEMA + ",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":300}}";
            JsonNode done = h.postJson(path, body);
            String text = path.equals("/api/generate") ? done.get("response").asText() : done.get("message").get("content").asText();
            assertEquals("stop", done.get("done_reason").asText(), done.toString());
            valid(SCHEMA, text);
            StringBuilder streamed = new StringBuilder();
            List<JsonNode> lines = h.postLines(path, body.replace("\"stream\":false", "\"stream\":true"));
            for (JsonNode l : lines) streamed.append(path.equals("/api/generate") ? l.path("response").asText("") : l.path("message").path("content").asText(""));
            assertEquals(text, streamed.toString(), "streamed == not streamed");
            assertEquals("stop", lines.getLast().get("done_reason").asText());
            // seeded sampling at a high temperature: still valid
            for (int seed = 0; seed < 4; seed++) {
                JsonNode s = h.postJson(path, body.replace("\"temperature\":0", "\"temperature\":1.5,\"seed\":" + seed));
                valid(SCHEMA, path.equals("/api/generate") ? s.get("response").asText() : s.get("message").get("content").asText());
            }
        }
    }

    @Test
    void ollamaFormatJsonIsAnObjectAndNumPredictCutsWithLength() throws Exception {
        JsonNode done = h.postJson("/api/generate", "{" + M + ",\"prompt\":\"Once\",\"format\":\"json\",\"stream\":false,"
                + "\"options\":{\"temperature\":0,\"num_predict\":8}}");
        String text = done.get("response").asText();
        assertTrue(text.strip().startsWith("{"), text);
        if (done.get("done_reason").asText().equals("stop")) assertTrue(STRICT.readTree(text).isObject(), text);
        else assertEquals(8, done.get("eval_count").asInt(), done.toString());
        // a schema that needs more than num_predict allows: what was generated, done_reason "length"
        JsonNode cut = h.postJson("/api/generate", "{" + M + ",\"prompt\":\"Once\",\"format\":" + SCHEMA + ",\"stream\":false,"
                + "\"options\":{\"temperature\":0,\"num_predict\":3}}");
        assertEquals("length", cut.get("done_reason").asText());
        assertEquals(3, cut.get("eval_count").asInt());
        var prefix = dev.forkpoint.sampling.structured.MatchState.start(dev.forkpoint.sampling.structured.JsonSchemaGrammar.compile(
                ServerHarness.json(SCHEMA))).advance(cut.get("response").asText().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        assertTrue(prefix != null && !prefix.accepting(), "an unfinished prefix of a valid reply: " + cut);
    }

    @Test
    void openAiResponseFormatJsonSchemaAndJsonObject() throws Exception {
        String body = "{" + M + ",\"temperature\":0,\"max_tokens\":300,\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about Lily.\"}],"
                + "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"person\",\"strict\":true,\"schema\":" + SCHEMA + "}}}";
        JsonNode choice = h.postJson("/v1/chat/completions", body).get("choices").get(0);
        assertEquals("stop", choice.get("finish_reason").asText());
        String content = choice.get("message").get("content").asText();
        valid(SCHEMA, content);
        StringBuilder streamed = new StringBuilder();
        String finish = null;
        for (ServerHarness.Sse e : h.postSse("/v1/chat/completions", body.replaceFirst("\\{", "{\"stream\":true,"))) {
            if (e.data().equals("[DONE]")) continue;
            JsonNode c = e.json().get("choices").get(0);
            streamed.append(c.get("delta").path("content").asText(""));
            if (!c.get("finish_reason").isNull()) finish = c.get("finish_reason").asText();
        }
        assertEquals(content, streamed.toString());
        assertEquals("stop", finish);
        JsonNode obj = h.postJson("/v1/chat/completions", body.replaceAll("\"response_format\":.*\\}\\}\\}$", "\"response_format\":{\"type\":\"json_object\"},\"max_tokens\":6}"));
        assertTrue(obj.get("choices").get(0).get("message").get("content").asText().strip().startsWith("{"), obj.toString());
    }

    static String tools(boolean openAi) {
        return openAi
                ? "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":" + WEATHER + "}},"
                        + "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":" + TIME + "}}]"
                : "\"tools\":[{\"name\":\"get_weather\",\"input_schema\":" + WEATHER + "},{\"name\":\"get_time\",\"input_schema\":" + TIME + "}]";
    }

    static String schemaOf(String tool) { return tool.equals("get_weather") ? WEATHER : TIME; }

    @Test
    void openAiForcedToolChoiceReturnsAValidCall() throws Exception {
        for (String choice : new String[] {"\"required\"", "{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}"}) {
            String body = "{" + M + ",\"temperature\":0,\"max_tokens\":200,\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}],"
                    + tools(true) + ",\"tool_choice\":" + choice + "}";
            JsonNode c = h.postJson("/v1/chat/completions", body).get("choices").get(0);
            assertEquals("tool_calls", c.get("finish_reason").asText(), c.toString());
            JsonNode call = c.get("message").get("tool_calls").get(0);
            String name = call.get("function").get("name").asText();
            if (choice.contains("get_time")) assertEquals("get_time", name);
            valid(schemaOf(name), call.get("function").get("arguments").asText());
            assertTrue(c.get("message").get("content").isNull(), c.toString());
            // streamed: the same call as one delta, no content
            List<ServerHarness.Sse> events = h.postSse("/v1/chat/completions", body.replaceFirst("\\{", "{\"stream\":true,"));
            JsonNode delta = null;
            StringBuilder content = new StringBuilder();
            for (ServerHarness.Sse e : events) {
                if (e.data().equals("[DONE]")) continue;
                JsonNode d = e.json().get("choices").get(0).get("delta");
                content.append(d.path("content").asText(""));
                if (d.has("tool_calls")) delta = d.get("tool_calls").get(0);
            }
            assertNotNull(delta, events.toString());
            assertEquals(name, delta.get("function").get("name").asText());
            assertEquals(STRICT.readTree(call.get("function").get("arguments").asText()), STRICT.readTree(delta.get("function").get("arguments").asText()));
            assertEquals("", content.toString());
        }
    }

    @Test
    void anthropicForcedToolChoiceReturnsAToolUseBlock() throws Exception {
        for (String choice : new String[] {"{\"type\":\"any\"}", "{\"type\":\"tool\",\"name\":\"get_weather\"}"}) {
            String body = "{" + M + ",\"temperature\":0,\"max_tokens\":200,\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}],"
                    + tools(false) + ",\"tool_choice\":" + choice + "}";
            JsonNode msg = h.postJson("/v1/messages", body);
            assertEquals("tool_use", msg.get("stop_reason").asText(), msg.toString());
            JsonNode content = msg.get("content");
            assertEquals(1, content.size(), content.toString());
            JsonNode use = content.get(0);
            assertEquals("tool_use", use.get("type").asText());
            if (choice.contains("get_weather")) assertEquals("get_weather", use.get("name").asText());
            valid(schemaOf(use.get("name").asText()), use.get("input"));
            StringBuilder partial = new StringBuilder();
            String stop = null, name = null;
            for (ServerHarness.Sse e : h.postSse("/v1/messages", body.replaceFirst("\\{", "{\"stream\":true,"))) {
                JsonNode d = e.json();
                switch (e.event()) {
                    case "content_block_start" -> {
                        assertEquals("tool_use", d.get("content_block").get("type").asText(), d.toString());
                        name = d.get("content_block").get("name").asText();
                    }
                    case "content_block_delta" -> partial.append(d.get("delta").get("partial_json").asText());
                    case "message_delta" -> stop = d.get("delta").get("stop_reason").asText();
                    case "error" -> throw new AssertionError(e.data());
                    default -> { }
                }
            }
            assertEquals(use.get("name").asText(), name);
            assertEquals(use.get("input"), STRICT.readTree(partial.toString()));
            assertEquals("tool_use", stop);
        }
    }

    @Test
    void unsupportedSchemasAreRefusedNamingFieldAndKeyword() throws Exception {
        String bad = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"multipleOf\":3}}}";
        HttpResponse<String> r = h.post("/api/chat", "{" + M + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"format\":" + bad + "}");
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("format") && r.body().contains("'multipleOf'"), r.body());
        r = h.post("/v1/chat/completions", "{" + M + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":" + bad + "}}],\"tool_choice\":\"required\"}");
        assertEquals(400, r.statusCode());
        JsonNode err = ServerHarness.json(r.body()).get("error");
        assertEquals("tools[0].function.parameters", err.get("param").asText());
        assertTrue(err.get("message").asText().contains("'multipleOf'"), r.body());
        r = h.post("/v1/messages", "{" + M + ",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"tools\":[{\"name\":\"f\",\"input_schema\":" + bad + "}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"f\"}}");
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("tools[0].input_schema") && r.body().contains("'multipleOf'"), r.body());
        r = h.post("/v1/messages", "{" + M + ",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"tools\":[{\"name\":\"f\",\"input_schema\":" + WEATHER + "}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"g\"}}");
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("tool_choice.name"), r.body());
        // unconstrained tools (auto) still work as before and the server still serves
        r = h.post("/v1/messages", "{" + M + ",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"tools\":[{\"name\":\"f\",\"input_schema\":" + bad + "}],\"tool_choice\":{\"type\":\"auto\"}}");
        assertEquals(200, r.statusCode(), r.body());
        assertFalse(r.body().contains("tool_use\""), r.body());
    }
}
