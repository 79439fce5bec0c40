package dev.forkpoint.chat;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tokenizer.Tokenizer;

import java.util.List;

/**
 * A model's chat template: renders messages (and tools) to the raw prompt, and knows how the model writes tool calls.
 *
 * <p>INTERIM implementation (API pinned): the Jinja template is not rendered yet; every model gets the plain format
 * below. The Jinja engine replaces the body, not the API.
 *
 * <p>Plain format (models without a template): the messages' contents joined by a blank line, roles unmarked.
 */
public final class ChatTemplate {
    private final String source;
    private final Tokenizer tokenizer;

    private ChatTemplate(String source, Tokenizer tokenizer) {
        this.source = source;
        this.tokenizer = tokenizer;
    }

    /**
     * The template of a model: {@code source} is its Jinja text ({@code tokenizer.chat_template} in GGUF), or null when
     * the model has none (the plain format is used). A template that does not parse throws
     * {@link dev.forkpoint.format.ModelFormatException} naming the template.
     */
    public static ChatTemplate of(String source, Tokenizer tokenizer) {
        return new ChatTemplate(source, tokenizer);
    }

    /** The Jinja source, or null for the plain format. */
    public String source() { return source; }

    /** How this model writes tool calls (from the template's text). */
    public ToolCallFormat toolCallFormat() { return ToolCallFormat.NONE; }

    /**
     * Renders {@code messages} with {@code tools} (may be empty); with {@code addGenerationPrompt} the prompt ends where
     * the assistant's reply begins. A role the template refuses, an empty message list or a template error
     * ({@code raise_exception}) throws {@link InvalidInputException} naming the message or the template's message.
     */
    public RenderedChat render(List<ChatMessage> messages, List<ToolDefinition> tools, boolean addGenerationPrompt) {
        if (messages.isEmpty()) throw new InvalidInputException("messages must not be empty");
        StringBuilder prompt = new StringBuilder();
        int[] ends = new int[messages.size()];
        for (int i = 0; i < messages.size(); i++) {
            ChatMessage m = messages.get(i);
            if (!List.of("system", "user", "assistant", "tool").contains(m.role())) {
                throw new InvalidInputException("messages[" + i + "].role must be system, user, assistant or tool, got '" + m.role() + "'");
            }
            if (i > 0) prompt.append("\n\n");
            prompt.append(m.content());
            ends[i] = prompt.length();
        }
        return new RenderedChat(prompt.toString(), ends);
    }

    /** Splits a finished assistant output into content and tool calls, per {@link #toolCallFormat()}. */
    public AssistantReply parseReply(String output) {
        return new AssistantReply(output, List.of());
    }

    /**
     * Token offsets of the rendered messages' ends in {@code tokenizer.encode(chat.prompt(), true, true)}, ascending and
     * within the prompt's tokens: the {@link dev.forkpoint.engine.GenerationRequest#messageBoundaries()}.
     */
    public int[] tokenBoundaries(RenderedChat chat) {
        return new int[0];
    }
}
