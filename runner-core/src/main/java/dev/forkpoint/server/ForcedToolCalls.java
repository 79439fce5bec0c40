package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.chat.ReplyFormat;
import dev.forkpoint.chat.ToolCallFormat;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.sampling.structured.GrammarNode;
import dev.forkpoint.sampling.structured.JsonSchemaGrammar;
import dev.forkpoint.sampling.structured.ToolCallGrammar;

import java.util.ArrayList;
import java.util.List;

/**
 * A forced tool call in the APIs' terms: the grammar that makes the reply a call of one of the allowed tools (its
 * arguments valid against the tool's input schema, {@link ToolCallGrammar}), and the reply read back as that call.
 */
public final class ForcedToolCalls {
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

    /**
     * How a forced call's output is read: the whole output is the call ({@link ToolCallFormat#FORCED}); it holds no
     * thinking (the grammar decides every token from the first); cut short (a token limit), it stays text.
     */
    public static final ReplyFormat REPLY = new ReplyFormat(false, false, ToolCallFormat.FORCED);
}
