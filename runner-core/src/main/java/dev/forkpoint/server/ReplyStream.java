package dev.forkpoint.server;

import dev.forkpoint.chat.AssistantReply;
import dev.forkpoint.chat.ReplyFormat;
import dev.forkpoint.chat.ThinkingParser;
import dev.forkpoint.chat.ThinkingSplit;
import dev.forkpoint.engine.GenerationEvent;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.TokenLogprob;

import java.util.ArrayList;
import java.util.List;

/**
 * A streamed reply divided as its {@link ReplyFormat} says, the same way for every API: each generated piece becomes
 * a {@link Delta} of thinking and answer text ({@link dev.forkpoint.chat.ThinkingParser}: a tag split across pieces is
 * held back until it is certain); when tool calls are parsed, the answer is held back whole and only the thinking
 * streams. Log-probabilities travel with the text they belong to: the entries of text held back wait for it (or for
 * the end), so the entries of all deltas together are those of the whole reply, in order. One reader thread.
 */
public final class ReplyStream {
    private final ReplyFormat format;
    private final ThinkingParser parser;
    private final List<TokenLogprob> pendingLogprobs = new ArrayList<>();

    public ReplyStream(ReplyFormat format) {
        this.format = format;
        this.parser = format.thinkingParser();
    }

    public ReplyFormat format() { return format; }

    /**
     * What one event adds to the stream.
     *
     * @param thinking thinking text ("" when none)
     * @param content  answer text ("" when none, and always while the answer is held back for tool parsing)
     * @param logprobs the entries released with this text (empty when none)
     */
    public record Delta(String thinking, String content, List<TokenLogprob> logprobs) {
        public boolean hasText() {
            return !thinking.isEmpty() || !content.isEmpty();
        }
    }

    /**
     * The end of a streamed reply.
     *
     * @param thinking the thinking text not yet streamed
     * @param content  the answer text not yet streamed: when tool calls were parsed, the whole answer less the calls
     * @param logprobs the entries not yet released
     * @param reply    the whole reply divided ({@link ReplyFormat#parse} of the result's text: equal to what streamed)
     */
    public record End(String thinking, String content, List<TokenLogprob> logprobs, AssistantReply reply) {}

    /** Divides one generated piece: null when it releases nothing yet (no text to send, entries kept for later). */
    public Delta text(GenerationEvent.Text t) {
        pendingLogprobs.addAll(t.logprobs());
        ThinkingSplit split = parser == null ? new ThinkingSplit("", t.piece()) : parser.add(t.piece());
        String content = format.parsesTools() ? "" : split.content();
        if (split.thinking().isEmpty() && content.isEmpty()) return null;
        return new Delta(split.thinking(), content, drainLogprobs());
    }

    /** The end: what is left to send, and the whole reply. */
    public End end(GenerationResult r) {
        ThinkingSplit rest = parser == null ? ThinkingSplit.EMPTY : parser.finish();
        AssistantReply reply = format.parse(r.text());
        String content = format.parsesTools() ? reply.content() : rest.content();
        return new End(rest.thinking(), content, drainLogprobs(), reply);
    }

    private List<TokenLogprob> drainLogprobs() {
        if (pendingLogprobs.isEmpty()) return List.of();
        List<TokenLogprob> out = List.copyOf(pendingLogprobs);
        pendingLogprobs.clear();
        return out;
    }
}
