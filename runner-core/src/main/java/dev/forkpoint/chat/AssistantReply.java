package dev.forkpoint.chat;

import java.util.List;

/**
 * A finished assistant output split into its text and the tool calls parsed from it.
 *
 * @param content   the text outside tool calls (trimmed of the whitespace the calls leave)
 * @param toolCalls the calls, in order (empty when there are none)
 */
public record AssistantReply(String content, List<ToolCall> toolCalls) {
    public AssistantReply {
        toolCalls = List.copyOf(toolCalls);
    }
}
