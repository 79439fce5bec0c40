package dev.forkpoint.sampling.structured;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.ArrayList;
import java.util.List;

/**
 * A forced tool call (OpenAI {@code tool_choice: "required"} or a named function, Anthropic {@code tool_choice} "any"
 * or "tool"): the output is constrained to one JSON object {@code {"name": N, "arguments": A}} where N is one of the
 * tools offered and A is valid against that tool's input schema, then read back as the call ({@link #parse}); the
 * API turns it into its own tool-call shape. The object is Forkpoint's own carrier, not a model's native tool-call
 * syntax: the reply never shows it.
 */
public final class ToolCallGrammar {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ToolCallGrammar() {}

    /** One tool the call may name, with the grammar of its arguments ({@link JsonSchemaGrammar#compileValue}). */
    public record Tool(String name, GrammarNode arguments) {}

    /** The call parsed back from a complete output. */
    public record Call(String name, JsonNode arguments) {}

    /** The grammar of a call of one of {@code tools} (at least one). */
    public static GrammarNode grammar(List<Tool> tools) {
        GrammarNode ws = JsonSchemaGrammar.whitespace();
        List<GrammarNode> calls = new ArrayList<>();
        for (Tool t : tools) {
            calls.add(new GrammarNode.Sequence(List.of(JsonSchemaGrammar.text("{"), ws, JsonSchemaGrammar.text("\"name\""), ws,
                    JsonSchemaGrammar.text(":"), ws, JsonSchemaGrammar.stringLiteral(t.name()), ws, JsonSchemaGrammar.text(","), ws,
                    JsonSchemaGrammar.text("\"arguments\""), ws, JsonSchemaGrammar.text(":"), ws, t.arguments(), ws,
                    JsonSchemaGrammar.text("}"))));
        }
        return JsonSchemaGrammar.document(GrammarNode.choice(calls));
    }

    /** The call in an output of {@link #grammar}, or null when the output is incomplete (cut by a token limit). */
    public static Call parse(String text) {
        try {
            JsonNode n = JSON.readTree(text);
            if (n == null || !n.isObject() || !n.path("name").isTextual() || !n.has("arguments")) return null;
            return new Call(n.get("name").asText(), n.get("arguments"));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            return null;
        }
    }
}
