package dev.forkpoint.chat;

/**
 * How one request's output is divided: whether it may hold a thinking block (and whether the prompt already opened
 * it), and which tool-call format its answer is parsed with ({@link ToolCallFormat#NONE} when the request offered no
 * tools or the model has no format). Made by {@link ChatTemplate#replyFormat}; the same for a streamed reply and a
 * whole one, so both divide the output alike.
 *
 * @param thinking       whether the output is searched for a thinking block
 * @param startsInside   whether the output starts inside the block (the prompt ends with its opening tag)
 * @param toolCallFormat how tool calls are parsed out of the answer
 */
public record ReplyFormat(boolean thinking, boolean startsInside, ToolCallFormat toolCallFormat) {
    /** Plain text: no thinking, no tool calls. */
    public static final ReplyFormat PLAIN = new ReplyFormat(false, false, ToolCallFormat.NONE);

    public ReplyFormat {
        if (toolCallFormat == null) toolCallFormat = ToolCallFormat.NONE;
        startsInside = thinking && startsInside;
    }

    /** Whether the answer is parsed for tool calls (and so must be held back until it is complete). */
    public boolean parsesTools() {
        return toolCallFormat != ToolCallFormat.NONE;
    }

    /** A parser for a streamed output, or null when this format has no thinking. */
    public ThinkingParser thinkingParser() {
        return thinking ? ThinkingParser.qwen(startsInside) : null;
    }

    /** Divides a whole output: the thinking, the answer, and the tool calls parsed from the answer. */
    public AssistantReply parse(String output) {
        if (output == null) output = "";
        String thinkingText = "", answer = output;
        if (thinking) {
            ThinkingParser p = thinkingParser();
            ThinkingSplit a = p.add(output), b = p.finish();
            thinkingText = a.thinking() + b.thinking();
            answer = a.content() + b.content();
        }
        return answer(thinkingText, answer);
    }

    /** The reply from its already divided parts: tool calls are parsed out of {@code answer}. */
    public AssistantReply answer(String thinkingText, String answer) {
        AssistantReply r = ToolCallParser.parse(toolCallFormat, answer);
        return new AssistantReply(r.content(), r.toolCalls(), thinkingText);
    }
}
