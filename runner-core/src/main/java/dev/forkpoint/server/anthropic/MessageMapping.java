package dev.forkpoint.server.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
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
 * Anthropic's {@code system} and {@code messages} as the chat template's {@link ChatMessage}s, and its tools as
 * {@link ToolDefinition}s. Content is a string or an array of blocks: {@code text}; in assistant turns
 * {@code tool_use} (→ the message's tool calls), {@code thinking} (→ the message's thinking, several joined by a line
 * break; the signature is not checked: Forkpoint signs nothing) and {@code redacted_thinking} (dropped: there is no
 * text to give the template); in
 * user turns {@code tool_result} (→ a "tool" message each, before the turn's text). Image and document blocks are a
 * 400 naming them (Forkpoint runs text models); so is every other malformed field, by its JSON path.
 */
final class MessageMapping {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private MessageMapping() {}

    static List<ChatMessage> messages(JsonNode system, List<JsonNode> messages) {
        if (messages == null) throw new BadFieldException("messages", "messages is required");
        if (messages.isEmpty()) throw new BadFieldException("messages", "messages must not be empty");
        List<ChatMessage> out = new ArrayList<>();
        String sys = system(system);
        if (!sys.isEmpty()) out.add(ChatMessage.of("system", sys));
        Map<String, String> callNames = new HashMap<>();
        for (int i = 0; i < messages.size(); i++) {
            String at = "messages[" + i + "]";
            JsonNode m = messages.get(i);
            if (m == null || !m.isObject()) throw new BadFieldException(at, at + " must be an object, got " + Json.describe(m));
            JsonNode roleNode = m.get("role");
            String role = roleNode != null && roleNode.isTextual() ? roleNode.asText() : null;
            if (!"user".equals(role) && !"assistant".equals(role)) {
                throw new BadFieldException(at + ".role", at + ".role must be \"user\" or \"assistant\", got " + Json.describe(roleNode));
            }
            JsonNode content = m.get("content");
            String cat = at + ".content";
            if (content == null || content.isNull()) throw new BadFieldException(cat, cat + " is required");
            if (content.isTextual()) {
                out.add(ChatMessage.of(role, content.asText()));
                continue;
            }
            if (!content.isArray()) throw new BadFieldException(cat, cat + " must be a string or an array of content blocks, got " + Json.describe(content));
            StringBuilder text = new StringBuilder();
            StringBuilder thinking = new StringBuilder();
            List<ToolCall> calls = new ArrayList<>();
            for (int j = 0; j < content.size(); j++) {
                String bat = cat + "[" + j + "]";
                JsonNode b = content.get(j);
                if (!b.isObject()) throw new BadFieldException(bat, bat + " must be a content block object, got " + Json.describe(b));
                String type = textField(b, "type", bat);
                switch (type) {
                    case "text" -> text.append(textField(b, "text", bat));
                    case "tool_use" -> {
                        if (!role.equals("assistant")) throw new BadFieldException(bat + ".type", bat + ": tool_use blocks belong in assistant messages");
                        String id = textField(b, "id", bat), name = textField(b, "name", bat);
                        JsonNode input = b.get("input");
                        if (input != null && !input.isNull() && !input.isObject()) {
                            throw new BadFieldException(bat + ".input", bat + ".input must be an object, got " + Json.describe(input));
                        }
                        calls.add(new ToolCall(id, name, input == null || input.isNull() ? F.objectNode() : input));
                        callNames.put(id, name);
                    }
                    case "tool_result" -> {
                        if (!role.equals("user")) throw new BadFieldException(bat + ".type", bat + ": tool_result blocks belong in user messages");
                        String id = textField(b, "tool_use_id", bat);
                        String result = toolResult(b.get("content"), bat + ".content");
                        JsonNode isError = b.get("is_error");
                        if (isError != null && isError.asBoolean(false)) result = "Error: " + result;
                        out.add(new ChatMessage("tool", result, List.of(), id, callNames.get(id)));
                    }
                    case "thinking", "redacted_thinking" -> {
                        if (!role.equals("assistant")) throw new BadFieldException(bat + ".type", bat + ": " + type + " blocks belong in assistant messages");
                        if (type.equals("thinking")) {
                            String t = textField(b, "thinking", bat);
                            if (!thinking.isEmpty() && !t.isEmpty()) thinking.append('\n');
                            thinking.append(t);
                        }
                    }
                    case "image", "document" -> throw new BadFieldException(bat,
                            bat + " is an '" + type + "' block: only text is supported (Forkpoint runs text models)");
                    default -> throw new BadFieldException(bat + ".type", bat + ".type \"" + type + "\" is not supported (text, tool_use, tool_result)");
                }
            }
            if (role.equals("assistant")) out.add(new ChatMessage("assistant", text.toString(), calls, null, null, thinking.toString()));
            else if (!text.isEmpty() || content.isEmpty()) out.add(ChatMessage.of("user", text.toString()));
        }
        return out;
    }

    /**
     * {@code thinking}: absent = the model's default (as Ollama's Anthropic layer does: a Qwen3 model thinks);
     * {@code {"type":"enabled","budget_tokens":N}} = on, N checked as Anthropic checks it (an integer ≥ 1024, below
     * {@code max_tokens} when that is given: {@code maxTokens} null skips it); {@code {"type":"disabled"}} = off;
     * {@code {"type":"adaptive"}} = the model decides (its default).
     */
    static dev.forkpoint.chat.ThinkMode thinking(JsonNode thinking, Integer maxTokens) {
        if (thinking == null || thinking.isNull()) return dev.forkpoint.chat.ThinkMode.DEFAULT;
        if (!thinking.isObject()) throw new BadFieldException("thinking", "thinking must be an object, got " + Json.describe(thinking));
        String type = textField(thinking, "type", "thinking");
        switch (type) {
            case "disabled" -> { return dev.forkpoint.chat.ThinkMode.OFF; }
            case "adaptive" -> { return dev.forkpoint.chat.ThinkMode.DEFAULT; }
            case "enabled" -> {
                JsonNode budget = thinking.get("budget_tokens");
                if (budget == null || !budget.canConvertToInt() || !budget.isIntegralNumber()) {
                    throw new BadFieldException("thinking.budget_tokens", "thinking.budget_tokens must be an integer, got " + Json.describe(budget));
                }
                int n = budget.intValue();
                if (n < MIN_THINKING_BUDGET) {
                    throw new BadFieldException("thinking.budget_tokens", "thinking.budget_tokens must be at least " + MIN_THINKING_BUDGET + ", got " + n);
                }
                if (maxTokens != null && n >= maxTokens) {
                    throw new BadFieldException("thinking.budget_tokens", "thinking.budget_tokens (" + n + ") must be less than max_tokens (" + maxTokens + ")");
                }
                return dev.forkpoint.chat.ThinkMode.ON;
            }
            default -> throw new BadFieldException("thinking.type", "thinking.type must be \"enabled\", \"disabled\" or \"adaptive\", got \"" + type + "\"");
        }
    }

    /** {@code thinking.budget_tokens} of an enabled thinking (checked by {@link #thinking}), or 0 when there is none. */
    static int thinkingBudget(JsonNode thinking) {
        if (thinking == null || !thinking.isObject() || !"enabled".equals(thinking.path("type").asText())) return 0;
        return thinking.path("budget_tokens").asInt(0);
    }

    /** Anthropic's smallest thinking budget. */
    static final int MIN_THINKING_BUDGET = 1024;

    /** {@code system}: null, a string, or an array of text blocks (joined). */
    static String system(JsonNode system) {
        if (system == null || system.isNull()) return "";
        if (system.isTextual()) return system.asText();
        if (!system.isArray()) throw new BadFieldException("system", "system must be a string or an array of text blocks, got " + Json.describe(system));
        StringBuilder s = new StringBuilder();
        for (int j = 0; j < system.size(); j++) {
            String at = "system[" + j + "]";
            JsonNode b = system.get(j);
            if (!b.isObject()) throw new BadFieldException(at, at + " must be a text block, got " + Json.describe(b));
            String type = textField(b, "type", at);
            if (!type.equals("text")) throw new BadFieldException(at + ".type", at + ".type must be \"text\", got \"" + type + "\"");
            if (!s.isEmpty()) s.append('\n');
            s.append(textField(b, "text", at));
        }
        return s.toString();
    }

    private static String toolResult(JsonNode content, String at) {
        if (content == null || content.isNull()) return "";
        if (content.isTextual()) return content.asText();
        if (!content.isArray()) throw new BadFieldException(at, at + " must be a string or an array of text blocks, got " + Json.describe(content));
        StringBuilder s = new StringBuilder();
        for (int k = 0; k < content.size(); k++) {
            String bat = at + "[" + k + "]";
            JsonNode b = content.get(k);
            if (!b.isObject()) throw new BadFieldException(bat, bat + " must be a content block, got " + Json.describe(b));
            String type = textField(b, "type", bat);
            if (!type.equals("text")) throw new BadFieldException(bat, bat + " is a '" + type + "' block: tool results may hold text only");
            s.append(textField(b, "text", bat));
        }
        return s.toString();
    }

    /**
     * The tools a forced {@code tool_choice} allows — all of them for "any", the named one for "tool" — or null when the
     * choice is not forced ("auto", "none", absent). Checked by {@link #tools} first.
     */
    static List<ToolDefinition> forcedTools(JsonNode toolChoice, List<ToolDefinition> tools) {
        if (toolChoice == null || toolChoice.isNull()) return null;
        String type = toolChoice.get("type").asText();
        if (!type.equals("any") && !type.equals("tool")) return null;
        if (tools.isEmpty()) throw new BadFieldException("tool_choice", "tool_choice \"" + type + "\" forces a tool call, but no tools are given");
        if (type.equals("any")) return tools;
        String name = textField(toolChoice, "name", "tool_choice");
        for (ToolDefinition t : tools) if (t.name().equals(name)) return List.of(t);
        throw new BadFieldException("tool_choice.name", "tool_choice.name \"" + name + "\" is not one of the tools given");
    }

    /** The tools offered (none when tool_choice is "none"). */
    static List<ToolDefinition> tools(List<JsonNode> tools, JsonNode toolChoice) {
        if (toolChoice != null && !toolChoice.isNull()) {
            if (!toolChoice.isObject()) throw new BadFieldException("tool_choice", "tool_choice must be an object, got " + Json.describe(toolChoice));
            String type = textField(toolChoice, "type", "tool_choice");
            switch (type) {
                case "none" -> { return List.of(); }
                case "auto", "any" -> { }
                case "tool" -> textField(toolChoice, "name", "tool_choice");
                default -> throw new BadFieldException("tool_choice.type", "tool_choice.type must be auto, any, tool or none, got \"" + type + "\"");
            }
        }
        if (tools == null) return List.of();
        List<ToolDefinition> out = new ArrayList<>();
        for (int i = 0; i < tools.size(); i++) {
            String at = "tools[" + i + "]";
            JsonNode t = tools.get(i);
            if (t == null || !t.isObject()) throw new BadFieldException(at, at + " must be an object, got " + Json.describe(t));
            JsonNode type = t.get("type");
            if (type != null && !type.isNull() && !(type.isTextual() && type.asText().equals("custom"))) {
                throw new BadFieldException(at + ".type", at + ".type " + Json.describe(type)
                        + " is not supported: only client tools (with input_schema) can be offered");
            }
            String name = textField(t, "name", at);
            if (name.isEmpty()) throw new BadFieldException(at + ".name", at + ".name must not be empty");
            JsonNode desc = t.get("description");
            if (desc != null && !desc.isNull() && !desc.isTextual()) {
                throw new BadFieldException(at + ".description", at + ".description must be a string, got " + Json.describe(desc));
            }
            JsonNode schema = t.get("input_schema");
            if (schema == null || !schema.isObject()) {
                throw new BadFieldException(at + ".input_schema", at + ".input_schema must be a JSON schema object, got " + Json.describe(schema));
            }
            out.add(new ToolDefinition(name, desc == null || desc.isNull() ? "" : desc.asText(), schema));
        }
        return out;
    }

    private static String textField(JsonNode obj, String field, String at) {
        JsonNode v = obj.get(field);
        if (v == null || !v.isTextual()) throw new BadFieldException(at + "." + field, at + "." + field + " must be a string, got " + Json.describe(v));
        return v.asText();
    }
}
