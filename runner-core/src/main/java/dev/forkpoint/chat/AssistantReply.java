package dev.forkpoint.chat;

import java.util.List;

/**
 * A finished assistant output split into its thinking, its text and the tool calls parsed from it.
 *
 * @param content   the text outside tool calls (trimmed of the whitespace the calls leave)
 * @param toolCalls the calls, in order (empty when there are none)
 * @param thinking  the thinking block's text ("" when there was none)
 */
public record AssistantReply(String content, List<ToolCall> toolCalls, String thinking) {
    public AssistantReply {
        toolCalls = List.copyOf(toolCalls);
        if (thinking == null) thinking = "";
    }

    /** A reply without thinking. */
    public AssistantReply(String content, List<ToolCall> toolCalls) {
        this(content, toolCalls, "");
    }
}
