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
 * @param thinking   for an assistant message: its thinking, as the client sent it back ("" when none); the template
 *                   gets it as {@code reasoning_content} (and {@code thinking})
 */
public record ChatMessage(String role, String content, List<ToolCall> toolCalls, String toolCallId, String toolName, String thinking) {
    public ChatMessage {
        if (content == null) content = "";
        if (thinking == null) thinking = "";
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    /** A message without thinking. */
    public ChatMessage(String role, String content, List<ToolCall> toolCalls, String toolCallId, String toolName) {
        this(role, content, toolCalls, toolCallId, toolName, "");
    }

    public static ChatMessage of(String role, String content) {
        return new ChatMessage(role, content, List.of(), null, null, "");
    }
}
