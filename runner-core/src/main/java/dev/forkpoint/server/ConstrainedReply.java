package dev.forkpoint.server;

import dev.forkpoint.chat.ReplyFormat;
import dev.forkpoint.chat.ThinkMode;
import dev.forkpoint.sampling.structured.GrammarNode;

/**
 * Thinking and structured outputs together: a grammar decides the reply from its first token, so a constrained reply
 * holds no thinking block. The template is rendered with thinking off (a thinking model's template then closes its
 * empty block in the prompt, and the grammar applies to the answer); a request that asks for both explicitly is
 * refused naming its thinking field, as Anthropic refuses thinking with a forced tool.
 */
public final class ConstrainedReply {
    private ConstrainedReply() {}

    /**
     * The thinking mode a request renders with: {@code think} unconstrained; off under a grammar, or a 400 naming
     * {@code thinkField} when the request asked for thinking explicitly ({@code grammarField} names what constrains it).
     */
    public static ThinkMode think(ThinkMode think, GrammarNode grammar, String thinkField, String grammarField) {
        if (grammar == null) return think;
        if (think.requested()) {
            throw new BadFieldException(thinkField, thinkField + " cannot be combined with " + grammarField
                    + ": a constrained reply holds no thinking; turn thinking off or drop " + grammarField);
        }
        return ThinkMode.OFF;
    }

    /** How the output is read: a forced call as that call, another constrained reply as plain content, else {@code chat}. */
    public static ReplyFormat format(ReplyFormat chat, GrammarNode grammar, boolean forcedCall) {
        if (forcedCall) return ForcedToolCalls.REPLY;
        return grammar != null ? ReplyFormat.PLAIN : chat;
    }
}
