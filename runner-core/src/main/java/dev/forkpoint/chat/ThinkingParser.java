package dev.forkpoint.chat;

/**
 * Divides a model's output, as it is generated, into its thinking block ({@code <think>…</think>} for Qwen3 and
 * DeepSeek-R1 style templates) and its answer. Pieces go in as they come ({@link #add}); each call returns what is
 * certain by then, and holds back only what may still turn out to be a tag or whitespace at the edge of the block: a
 * tag split over several pieces (even byte-sized ones) is recognised, and the result never depends on how the output
 * was cut into pieces. {@link #finish} releases what was held at the end of the output.
 *
 * <p>The rules:
 * <ul>
 *   <li>When the prompt already opened the block (templates that end the generation prompt with {@code <think>}), the
 *       output starts inside it ({@code startsInside}); a model that opens it once more is not confused by that.</li>
 *   <li>Otherwise the output is thinking only when, past leading whitespace, it starts with the opening tag; any other
 *       start makes the whole output the answer, unchanged (whitespace included).</li>
 *   <li>Text up to the closing tag is thinking, without the whitespace at its two ends; after the tag, the answer
 *       begins at its first non-whitespace character.</li>
 *   <li>An output that ends inside the block (no closing tag: stopped by length or a stop string) is all thinking.</li>
 * </ul>
 *
 * <p>One parser per output; not thread-safe.
 */
public final class ThinkingParser {
    private enum State {
        /** At the start: waiting to see whether the output opens the block. */
        EXPECT_OPEN,
        /** Inside the block, before its first non-whitespace character. */
        THINKING_START,
        /** Inside the block. */
        THINKING,
        /** After the closing tag, before the answer's first non-whitespace character. */
        ANSWER_START,
        /** In the answer: everything passes through. */
        ANSWER
    }

    private final String open;
    private final String close;
    private State state;
    private boolean mayReopen;
    private final StringBuilder pending = new StringBuilder();

    /**
     * @param open         the opening tag ({@code <think>})
     * @param close        the closing tag ({@code </think>})
     * @param startsInside whether the prompt already opened the block, so that the output starts inside it
     */
    public ThinkingParser(String open, String close, boolean startsInside) {
        if (open == null || open.isEmpty() || close == null || close.isEmpty()) throw new IllegalArgumentException("tags must not be empty");
        this.open = open;
        this.close = close;
        this.state = startsInside ? State.THINKING_START : State.EXPECT_OPEN;
        this.mayReopen = startsInside;
    }

    /** A parser for Qwen3's {@value ChatTemplate#THINK_OPEN} … {@value ChatTemplate#THINK_CLOSE} tags. */
    public static ThinkingParser qwen(boolean startsInside) {
        return new ThinkingParser(ChatTemplate.THINK_OPEN, ChatTemplate.THINK_CLOSE, startsInside);
    }

    /** Whether the parser is (so far) inside the thinking block. */
    public boolean inThinking() {
        return state == State.THINKING_START || state == State.THINKING;
    }

    /** Takes the next piece of output; returns the thinking and answer text that it makes certain. */
    public ThinkingSplit add(String piece) {
        if (piece == null || piece.isEmpty()) return ThinkingSplit.EMPTY;
        if (state == State.ANSWER) return new ThinkingSplit("", piece);
        pending.append(piece);
        StringBuilder thinking = new StringBuilder();
        StringBuilder content = new StringBuilder();
        boolean progress = true;
        while (progress) progress = step(thinking, content);
        return new ThinkingSplit(thinking.toString(), content.toString());
    }

    /** The end of the output: releases what was held back. The parser must not be used afterwards. */
    public ThinkingSplit finish() {
        String rest = pending.toString();
        pending.setLength(0);
        return switch (state) {
            case EXPECT_OPEN -> new ThinkingSplit("", rest);              // whitespace, or the start of a tag that never came
            case THINKING, THINKING_START -> new ThinkingSplit(rest.stripTrailing(), "");   // no closing tag: all thinking
            case ANSWER_START, ANSWER -> ThinkingSplit.EMPTY;
        };
    }

    /** One transition over {@link #pending}; true when another may follow at once. */
    private boolean step(StringBuilder thinking, StringBuilder content) {
        switch (state) {
            case EXPECT_OPEN -> {
                int lead = leadingWhitespace(pending);
                if (lead == pending.length()) return false;
                String rest = pending.substring(lead);
                if (rest.startsWith(open)) {
                    pending.delete(0, lead + open.length());
                    state = State.THINKING_START;
                    return true;
                }
                if (open.startsWith(rest)) return false;   // maybe the tag, cut short: wait for more
                content.append(pending);
                pending.setLength(0);
                state = State.ANSWER;
                return false;
            }
            case THINKING_START -> {
                pending.delete(0, leadingWhitespace(pending));
                if (pending.isEmpty()) return false;
                if (mayReopen) {
                    String rest = pending.toString();
                    if (rest.startsWith(open)) {
                        pending.delete(0, open.length());
                        mayReopen = false;
                        return true;
                    }
                    if (open.startsWith(rest)) return false;
                    mayReopen = false;
                }
                state = State.THINKING;
                return true;
            }
            case THINKING -> {
                int at = pending.indexOf(close);
                if (at >= 0) {
                    thinking.append(pending, 0, at);
                    trimTrailing(thinking);
                    pending.delete(0, at + close.length());
                    state = State.ANSWER_START;
                    return true;
                }
                // hold back a possible start of the closing tag, and the whitespace before it (it may end the block)
                int safe = pending.length() - tagPrefixAtEnd(pending, close);
                int keep = safe;
                while (keep > 0 && Character.isWhitespace(pending.charAt(keep - 1))) keep--;
                thinking.append(pending, 0, keep);
                pending.delete(0, keep);
                return false;
            }
            case ANSWER_START -> {
                pending.delete(0, leadingWhitespace(pending));
                if (pending.isEmpty()) return false;
                content.append(pending);
                pending.setLength(0);
                state = State.ANSWER;
                return false;
            }
            case ANSWER -> {
                content.append(pending);
                pending.setLength(0);
                return false;
            }
        }
        return false;
    }

    private static int leadingWhitespace(CharSequence s) {
        int i = 0;
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        return i;
    }

    /** Removes trailing whitespace from the part of {@code thinking} built in this call (held whitespace came with it). */
    private static void trimTrailing(StringBuilder thinking) {
        int end = thinking.length();
        while (end > 0 && Character.isWhitespace(thinking.charAt(end - 1))) end--;
        thinking.setLength(end);
    }

    /** The length of the longest proper prefix of {@code tag} that {@code s} ends with. */
    private static int tagPrefixAtEnd(CharSequence s, String tag) {
        for (int k = Math.min(tag.length() - 1, s.length()); k > 0; k--) {
            boolean match = true;
            for (int i = 0; i < k && match; i++) match = s.charAt(s.length() - k + i) == tag.charAt(i);
            if (match) return k;
        }
        return 0;
    }
}
