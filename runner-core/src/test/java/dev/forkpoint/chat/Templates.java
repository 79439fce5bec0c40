package dev.forkpoint.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Chat templates of public models (test resources under chat/) and the messages the tests render. */
final class Templates {
    static final ObjectMapper JSON = new ObjectMapper();

    private Templates() {}

    static String resource(String name) {
        try (InputStream in = Templates.class.getResourceAsStream("/chat/" + name)) {
            if (in == null) throw new IllegalStateException("missing test resource chat/" + name);
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static JsonNode json(String text) {
        try {
            return JSON.readTree(text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static ToolDefinition weatherTool() {
        return new ToolDefinition("get_weather", "Current weather of a city", json("""
                {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}"""));
    }

    static ChatMessage assistantCalls(ToolCall... calls) {
        return new ChatMessage("assistant", "", List.of(calls), null, null);
    }

    static ChatMessage toolResult(String id, String content) {
        return new ChatMessage("tool", content, List.of(), id, "get_weather");
    }
}
