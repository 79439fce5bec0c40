package dev.forkpoint.chat;

import java.util.List;

/**
 * One message of a chat, in the API-neutral form the chat template renders. The servers map their own shapes (Ollama
 * {@code messages}, OpenAI {@code messages}, Anthropic {@code system} + {@code messages} with content blocks) onto it.
 *
 * @param role       "system", "user", "assistant" or "tool"
 * @param content    the message's text ("" when it has none, e.g. an assistant turn that only calls tools)
 * @param toolCalls  the tool calls an assistant message made (empty otherwise)
 * @param toolCallId for a "tool" message: the id of the call it answers (null when the API has none)
 * @param toolName   for a "tool" message: the name of the tool that answered (null when unknown)
 */
public record ChatMessage(String role, String content, List<ToolCall> toolCalls, String toolCallId, String toolName) {
    public ChatMessage {
        if (content == null) content = "";
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    public static ChatMessage of(String role, String content) {
        return new ChatMessage(role, content, List.of(), null, null);
    }
}
