package dev.forkpoint.chat;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Splits a finished assistant output into content and tool calls. Never throws: what does not parse as a call stays
 * in the content, as the model wrote it.
 */
final class ToolCallParser {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern QWEN_CALL = Pattern.compile("<tool_call>(.*?)(?:</tool_call>|$)", Pattern.DOTALL);
    private static final String PYTHON_TAG = "<|python_tag|>";
    private static final String ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    private ToolCallParser() {}

    static AssistantReply parse(ToolCallFormat format, String output) {
        if (output == null) output = "";
        return switch (format) {
            case NONE -> new AssistantReply(output, List.of());
            case QWEN_XML -> qwen(output);
            case LLAMA3_JSON, FORCED -> llama3(output);
        };
    }

    /** Every {@code <tool_call>{json}</tool_call>} that parses becomes a call; the rest, trimmed, is the content. */
    private static AssistantReply qwen(String output) {
        List<ToolCall> calls = new ArrayList<>();
        StringBuilder content = new StringBuilder();
        Matcher m = QWEN_CALL.matcher(output);
        int last = 0;
        while (m.find()) {
            ToolCall call = call(m.group(1).strip());
            if (call == null) continue;  // not a call: stays in the content
            content.append(output, last, m.start());
            last = m.end();
            calls.add(call);
        }
        if (calls.isEmpty()) return new AssistantReply(output, List.of());
        content.append(output.substring(last));
        return new AssistantReply(content.toString().strip(), calls);
    }

    /** The whole reply (after an optional {@code <|python_tag|>}) is one or more JSON calls separated by ";". */
    private static AssistantReply llama3(String output) {
        String text = output.strip();
        if (text.startsWith(PYTHON_TAG)) text = text.substring(PYTHON_TAG.length()).strip();
        if (!text.startsWith("{")) return new AssistantReply(output, List.of());
        List<ToolCall> calls = new ArrayList<>();
        int pos = 0;
        while (pos < text.length()) {
            int end = objectEnd(text, pos);
            if (end < 0) return new AssistantReply(output, List.of());
            ToolCall call = call(text.substring(pos, end));
            if (call == null) return new AssistantReply(output, List.of());
            calls.add(call);
            pos = end;
            while (pos < text.length() && (Character.isWhitespace(text.charAt(pos)) || text.charAt(pos) == ';')) pos++;
        }
        return new AssistantReply("", calls);
    }

    /** The offset after the JSON object starting at {@code from}, or -1 when there is none. */
    private static int objectEnd(String text, int from) {
        if (text.charAt(from) != '{') return -1;
        try (JsonParser p = JSON.createParser(text.substring(from))) {
            p.nextToken();
            p.skipChildren();
            return from + (int) p.currentLocation().getCharOffset();
        } catch (Exception e) {
            return -1;
        }
    }

    /** A call from {@code {"name": …, "arguments"|"parameters": {…}}}, or null when {@code json} is not one. */
    private static ToolCall call(String json) {
        JsonNode node;
        try {
            node = JSON.readTree(json);
        } catch (Exception e) {
            return null;
        }
        if (node == null || !node.isObject() || !node.path("name").isTextual()) return null;
        JsonNode args = node.has("arguments") ? node.get("arguments") : node.get("parameters");
        return new ToolCall(newId(), node.get("name").asText(), argumentsObject(args));
    }

    /** Arguments as a JSON object: a string holding JSON is parsed; missing or null is {}. */
    static JsonNode argumentsObject(JsonNode args) {
        if (args == null || args.isNull() || args.isMissingNode()) return JSON.createObjectNode();
        if (args.isTextual()) {
            String s = args.asText().strip();
            if (s.isEmpty()) return JSON.createObjectNode();
            try {
                JsonNode parsed = JSON.readTree(s);
                if (parsed != null && parsed.isObject()) return parsed;
            } catch (Exception ignored) {
                // not JSON: kept as a string value below
            }
        }
        if (args.isObject()) return args;
        ObjectNode wrapped = JSON.createObjectNode();
        wrapped.set("value", args);
        return wrapped;
    }

    /** "call_" and 24 random letters and digits, as OpenAI's ids look. */
    static String newId() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        StringBuilder b = new StringBuilder("call_");
        for (int i = 0; i < 24; i++) b.append(ID_CHARS.charAt(r.nextInt(ID_CHARS.length())));
        return b.toString();
    }
}
