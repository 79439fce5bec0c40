package dev.forkpoint.server.openai;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ToolCall;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.Json;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * OpenAI chat messages and tools as the chat template's {@link ChatMessage}s and {@link ToolDefinition}s. Content is a
 * string, null, or an array of parts of which only text parts are accepted (an image, audio or file part is a 400
 * naming it: Forkpoint runs text models). Roles: system and developer (both the template's system), user, assistant
 * (with {@code tool_calls}, whose arguments are a JSON-object string) and tool (with {@code tool_call_id}; the tool's
 * name is taken from the assistant call it answers). Every problem is a 400 naming the field by its JSON path.
 */
final class ChatMapping {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private ChatMapping() {}

    static List<ChatMessage> messages(List<JsonNode> messages) {
        if (messages == null) throw new BadFieldException("messages", "messages is required");
        if (messages.isEmpty()) throw new BadFieldException("messages", "messages must not be empty");
        List<ChatMessage> out = new ArrayList<>();
        Map<String, String> callNames = new HashMap<>();
        for (int i = 0; i < messages.size(); i++) {
            String at = "messages[" + i + "]";
            JsonNode m = messages.get(i);
            if (m == null || !m.isObject()) throw new BadFieldException(at, at + " must be an object, got " + Json.describe(m));
            JsonNode roleNode = m.get("role");
            if (roleNode == null || !roleNode.isTextual()) {
                throw new BadFieldException(at + ".role", at + ".role must be a string, got " + Json.describe(roleNode));
            }
            String role = roleNode.asText();
            String content = content(m.get("content"), at + ".content");
            switch (role) {
                case "system", "developer" -> out.add(ChatMessage.of("system", content));
                case "user" -> out.add(ChatMessage.of("user", content));
                case "assistant" -> {
                    List<ToolCall> calls = toolCalls(m.get("tool_calls"), at + ".tool_calls");
                    for (ToolCall c : calls) callNames.put(c.id(), c.name());
                    out.add(new ChatMessage("assistant", content, calls, null, null, reasoning(m, at)));
                }
                case "tool" -> {
                    JsonNode id = m.get("tool_call_id");
                    if (id == null || !id.isTextual()) {
                        throw new BadFieldException(at + ".tool_call_id", at + ".tool_call_id must be a string, got " + Json.describe(id));
                    }
                    out.add(new ChatMessage("tool", content, List.of(), id.asText(), callNames.get(id.asText())));
                }
                default -> throw new BadFieldException(at + ".role", at + ".role must be system, developer, user, assistant or tool, got \"" + role + "\"");
            }
        }
        return out;
    }

    /**
     * An assistant message's thinking, sent back: {@code reasoning_content} (DeepSeek, vLLM) or {@code reasoning}
     * (Ollama), a string or null.
     */
    static String reasoning(JsonNode m, String at) {
        for (String field : new String[] {"reasoning_content", "reasoning"}) {
            JsonNode r = m.get(field);
            if (r == null || r.isNull()) continue;
            if (!r.isTextual()) throw new BadFieldException(at + "." + field, at + "." + field + " must be a string, got " + Json.describe(r));
            if (!r.asText().isEmpty()) return r.asText();
        }
        return "";
    }

    /** A message's content as text: a string, null (""), or the concatenation of its text parts. */
    static String content(JsonNode content, String at) {
        if (content == null || content.isNull()) return "";
        if (content.isTextual()) return content.asText();
        if (!content.isArray()) throw new BadFieldException(at, at + " must be a string or an array of content parts, got " + Json.describe(content));
        StringBuilder text = new StringBuilder();
        for (int j = 0; j < content.size(); j++) {
            String pat = at + "[" + j + "]";
            JsonNode part = content.get(j);
            if (!part.isObject()) throw new BadFieldException(pat, pat + " must be a content part object, got " + Json.describe(part));
            JsonNode type = part.get("type");
            String t = type != null && type.isTextual() ? type.asText() : null;
            if (t == null) throw new BadFieldException(pat + ".type", pat + ".type must be a string, got " + Json.describe(type));
            switch (t) {
                case "text" -> {
                    JsonNode s = part.get("text");
                    if (s == null || !s.isTextual()) throw new BadFieldException(pat + ".text", pat + ".text must be a string, got " + Json.describe(s));
                    text.append(s.asText());
                }
                case "image_url", "input_audio", "file", "image" -> throw new BadFieldException(pat,
                        pat + " is a '" + t + "' part: only text parts are supported (Forkpoint runs text models)");
                default -> throw new BadFieldException(pat + ".type", pat + ".type must be \"text\", got \"" + t + "\"");
            }
        }
        return text.toString();
    }

    private static List<ToolCall> toolCalls(JsonNode calls, String at) {
        if (calls == null || calls.isNull()) return List.of();
        if (!calls.isArray()) throw new BadFieldException(at, at + " must be an array, got " + Json.describe(calls));
        List<ToolCall> out = new ArrayList<>();
        for (int j = 0; j < calls.size(); j++) {
            String cat = at + "[" + j + "]";
            JsonNode c = calls.get(j);
            JsonNode fn = c.get("function");
            if (fn == null || !fn.isObject()) throw new BadFieldException(cat + ".function", cat + ".function must be an object, got " + Json.describe(fn));
            JsonNode name = fn.get("name");
            if (name == null || !name.isTextual() || name.asText().isEmpty()) {
                throw new BadFieldException(cat + ".function.name", cat + ".function.name must be a non-empty string, got " + Json.describe(name));
            }
            JsonNode id = c.get("id");
            out.add(new ToolCall(id != null && id.isTextual() ? id.asText() : "call_" + j, name.asText(),
                    arguments(fn.get("arguments"), cat + ".function.arguments")));
        }
        return out;
    }

    /** OpenAI sends arguments as a string holding a JSON object (an object itself is accepted too). */
    private static JsonNode arguments(JsonNode args, String at) {
        if (args == null || args.isNull()) return F.objectNode();
        if (args.isObject()) return args;
        if (!args.isTextual()) throw new BadFieldException(at, at + " must be a string holding a JSON object, got " + Json.describe(args));
        if (args.asText().isBlank()) return F.objectNode();
        try {
            JsonNode parsed = Json.MAPPER.readTree(args.asText());
            if (parsed == null || !parsed.isObject()) throw new BadFieldException(at, at + " must hold a JSON object, got " + Json.describe(parsed));
            return parsed;
        } catch (JacksonException e) {
            throw new BadFieldException(at, at + " is not valid JSON: " + e.getOriginalMessage());
        }
    }

    /**
     * The tools a forced {@code tool_choice} allows — all of them for "required", the named one for
     * {@code {"type":"function","function":{"name":…}}} — or null when the choice is not forced ("auto", "none", absent).
     */
    static List<ToolDefinition> forcedTools(JsonNode toolChoice, List<ToolDefinition> tools) {
        if (toolChoice == null || toolChoice.isNull() || toolChoice.isTextual() && !toolChoice.asText().equals("required")) return null;
        if (tools.isEmpty()) throw new BadFieldException("tool_choice", "tool_choice " + Json.describe(toolChoice) + " forces a tool call, but no tools are given");
        if (toolChoice.isTextual()) return tools;
        String name = toolChoice.path("function").path("name").asText("");
        for (ToolDefinition t : tools) if (t.name().equals(name)) return List.of(t);
        throw new BadFieldException("tool_choice.function.name", "tool_choice.function.name \"" + name + "\" is not one of the tools given");
    }

    /** The tools offered, or none when {@code tool_choice} is "none". */
    static List<ToolDefinition> tools(List<JsonNode> tools, JsonNode toolChoice) {
        if (toolChoice != null && !toolChoice.isNull()) {
            if (toolChoice.isTextual() && toolChoice.asText().equals("none")) return List.of();
            boolean ok = toolChoice.isTextual() && (toolChoice.asText().equals("auto") || toolChoice.asText().equals("required"))
                    || toolChoice.isObject() && toolChoice.path("type").asText("").equals("function")
                    && toolChoice.path("function").path("name").isTextual();
            if (!ok) {
                throw new BadFieldException("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or "
                        + "{\"type\":\"function\",\"function\":{\"name\":…}}, got " + Json.describe(toolChoice));
            }
        }
        if (tools == null) return List.of();
        List<ToolDefinition> out = new ArrayList<>();
        for (int i = 0; i < tools.size(); i++) {
            String at = "tools[" + i + "]";
            JsonNode t = tools.get(i);
            if (t == null || !t.isObject()) throw new BadFieldException(at, at + " must be an object, got " + Json.describe(t));
            JsonNode type = t.get("type");
            if (type != null && !(type.isTextual() && type.asText().equals("function"))) {
                throw new BadFieldException(at + ".type", at + ".type must be \"function\", got " + Json.describe(type));
            }
            JsonNode fn = t.get("function");
            if (fn == null || !fn.isObject()) throw new BadFieldException(at + ".function", at + ".function must be an object, got " + Json.describe(fn));
            JsonNode name = fn.get("name");
            if (name == null || !name.isTextual() || name.asText().isEmpty()) {
                throw new BadFieldException(at + ".function.name", at + ".function.name must be a non-empty string, got " + Json.describe(name));
            }
            JsonNode desc = fn.get("description");
            if (desc != null && !desc.isNull() && !desc.isTextual()) {
                throw new BadFieldException(at + ".function.description", at + ".function.description must be a string, got " + Json.describe(desc));
            }
            JsonNode params = fn.get("parameters");
            if (params != null && !params.isNull() && !params.isObject()) {
                throw new BadFieldException(at + ".function.parameters", at + ".function.parameters must be a JSON schema object, got " + Json.describe(params));
            }
            out.add(new ToolDefinition(name.asText(), desc == null || desc.isNull() ? "" : desc.asText(),
                    params == null || params.isNull() ? emptySchema() : params));
        }
        return out;
    }

    static ObjectNode emptySchema() {
        ObjectNode s = F.objectNode().put("type", "object");
        s.putObject("properties");
        return s;
    }
}
