package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.chat.AssistantReply;
import dev.forkpoint.chat.ToolCall;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.sampling.structured.GrammarNode;
import dev.forkpoint.sampling.structured.JsonSchemaGrammar;
import dev.forkpoint.sampling.structured.ToolCallGrammar;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;

/**
 * A forced tool call in the APIs' terms: the grammar that makes the reply a call of one of the allowed tools (its
 * arguments valid against the tool's input schema, {@link ToolCallGrammar}), and the reply read back as that call.
 */
public final class ForcedToolCalls {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    private ForcedToolCalls() {}

    /**
     * The grammar of a call of one of {@code allowed} (a sublist of {@code all}); a schema structured outputs cannot
     * follow is a 400 naming its field, {@code fieldPattern} formatted with the tool's index in {@code all}.
     */
    public static GrammarNode grammar(List<ToolDefinition> allowed, String fieldPattern, List<ToolDefinition> all) {
        List<ToolCallGrammar.Tool> tools = new ArrayList<>();
        for (ToolDefinition t : allowed) {
            try {
                tools.add(new ToolCallGrammar.Tool(t.name(), JsonSchemaGrammar.compileValue(t.parameters())));
            } catch (InvalidInputException e) {
                String field = String.format(java.util.Locale.ROOT, fieldPattern, all.indexOf(t));
                throw new BadFieldException(field, field + ": " + e.getMessage());
            }
        }
        return ToolCallGrammar.grammar(tools);
    }

    /** The reply as the call it holds; an output cut short (max_tokens) stays text, with no call. */
    public static AssistantReply reply(String text) {
        ToolCallGrammar.Call call = ToolCallGrammar.parse(text);
        if (call == null) return new AssistantReply(text, List.of());
        StringBuilder id = new StringBuilder("call_");
        for (int i = 0; i < 24; i++) id.append(ALPHABET.charAt(RANDOM.nextInt(ALPHABET.length())));
        return new AssistantReply("", List.of(new ToolCall(id.toString(), call.name(), call.arguments())));
    }
}
