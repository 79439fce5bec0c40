package dev.forkpoint.chat;

import dev.forkpoint.InvalidInputException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Finds where a chat's messages end in its rendered prompt with two renders of the whole chat, however many ends are
 * wanted, plus renders of a few messages each that a template's later requests reuse; {@link ChatTemplate} falls back
 * to rendering each growing prefix when the marks cannot vouch for the result.
 *
 * <p>Marks: the chat is rendered a second time with each message's content followed by a mark, one code point of the
 * Supplementary Private Use Area-A per message ({@code U+F0000 + index}). The prompt and the contents must hold no
 * code point of planes 15–16 (else: fallback); the marked render with its marks removed must equal the prompt
 * exactly, and each mark must occur exactly once and in message order (else: fallback — the template transformed the
 * end of, dropped, repeated or reordered content, e.g. {@code |trim} over trailing whitespace, or took another branch
 * because of a mark and wrote something else). Then a mark's place is where what the template made of that message's
 * content ends in the prompt (a cut start, as {@code .strip()} or {@code .split('</think>')[-1]} make, leaves the end
 * where it is).
 *
 * <p>Ends: a message's end is where the next message's rendering begins: its content end plus the closing the
 * template writes after it when it is the chat's last message (no generation prompt), kept only where the prompt
 * continues with exactly that closing after the content end. The closing comes from a render of the message after the
 * one before it, their contents replaced by marks (constant in size, not in the chat's length, and the same for the
 * next message of that shape: the template caches it, see {@link Closings}); where the template refuses those two or
 * closes the message otherwise than the prompt does (Llama 2 wants a user turn first; Qwen3 renders a first system
 * message into its tools header), with up to 3 messages before it, and last with those after the last user turn before
 * them (Qwen3 renders an assistant turn by whether a user query precedes it, however far back).
 * A message without content (an assistant turn that only calls tools) is measured the same way from the last content
 * before it, or from the prompt's start. An end is unknown (−1) where none of this matches the prompt (also where
 * the template branches on content that the marks replace, as Qwen3 on a user turn that holds a {@code
 * <tool_response>}: it may then miss an end the prefixes find), or where the ends would not ascend strictly or would
 * pass the start of the next message's content.
 *
 * <p>Against rendering prefixes ({@code MessageEndsPropertyTest}): both find the same end wherever the template
 * renders a message the same way whether or not later messages follow; where it does not (Qwen3 drops an earlier
 * assistant turn's thinking and its empty {@code <think>} block once a later user turn exists), the prefix renders
 * find no end, and this finds where the next message begins in this prompt, which later requests that keep these
 * messages render alike.
 */
final class MessageEnds {
    private MessageEnds() {}

    /** Renders message maps (the template's {@code messages}) with or without the generation prompt. */
    interface Renderer {
        String render(List<Object> messages, boolean addGenerationPrompt);
    }

    private static final int MARK_BASE = 0xF0000;
    /** The marks of a closing's render: its last message's content, the one before it (and mark(k) k messages before). */
    private static final String OWN_MARK = mark(0), PREV_MARK = mark(1);
    /** The mark of a user turn that a closing's render puts first, however far back it is: U+FFFFD. */
    private static final String LEAD_MARK = mark(0xFFFD);
    /** The most messages before a message that a closing's render takes when the template refuses fewer. */
    private static final int CONTEXT = 3;
    /** Marks are U+F0000 + index: one per message, below LEAD_MARK. */
    static final int MAX_MESSAGES = 0xFFFD;

    /**
     * The ends (char offsets in {@code full} minus {@code offset}, −1 where unknown) of messages from {@code from} on
     * (those before are −1), or null when the marked render cannot vouch for content ends (the caller renders
     * prefixes instead).
     *
     * @param full     the chat's render (with the generation prompt when {@code addGenerationPrompt})
     * @param offset   chars at the start of {@code full} that the prompt drops (a BOS the tokenizer adds itself)
     * @param maps     the message maps the chat was rendered from (not changed)
     * @param closings the template's learned closings
     * @param context  what else the renderer's output depends on (a key of {@code closings})
     */
    static int[] find(List<ChatMessage> messages, List<Map<String, Object>> maps, String full, int offset, int from,
                      boolean addGenerationPrompt, Renderer renderer, Closings closings, Object context) {
        int n = messages.size();
        if (n > MAX_MESSAGES || hasMarkPlane(full)) return null;
        int first = Math.max(0, from - 1);   // the last content before the first wanted message anchors an empty one
        while (first > 0 && messages.get(first).content().isEmpty()) first--;
        boolean[] marked = new boolean[n];
        List<Object> markedMaps = new ArrayList<>(maps);
        for (int i = first; i < n; i++) {
            String content = messages.get(i).content();
            if (content.isEmpty()) continue;
            if (hasMarkPlane(content) || hasMarkPlane(messages.get(i).thinking())) return null;
            marked[i] = true;
            markedMaps.set(i, withContent(maps.get(i), content + mark(i)));
        }
        String withMarks;
        try {
            withMarks = renderer.render(markedMaps, addGenerationPrompt);
        } catch (InvalidInputException e) {
            return null;   // the marks changed what the template accepts
        }
        int[] at = markPlaces(withMarks, full, marked);
        if (at == null) return null;

        int[] contentEnd = new int[n];    // in full, -1 where not marked
        int[] contentStart = new int[n];  // where the content starts (or ends, when it was cut): the previous end's bound
        for (int i = 0; i < n; i++) {
            contentEnd[i] = -1;
            contentStart[i] = -1;
            if (!marked[i]) continue;
            String content = messages.get(i).content();
            int start = at[i] - content.length();
            contentEnd[i] = at[i];   // where what the template made of the content ends (it may have cut its start)
            contentStart[i] = start >= 0 && full.startsWith(content, start) ? start : at[i];
        }

        int[] ends = new int[n];
        Arrays.fill(ends, -1);
        int last = offset;   // ends found ascend strictly, after the dropped BOS
        for (int i = from; i < n; i++) {
            int end = (i == n - 1 && !addGenerationPrompt) ? full.length() : end(messages, maps, full, contentEnd, i, renderer, closings, context);
            if (end < 0 || end <= last || end > nextContentStart(contentStart, i)) continue;
            ends[i] = end - offset;
            last = end;
        }
        return ends;
    }

    /** Where message i's rendering ends in full, or -1. */
    private static int end(List<ChatMessage> messages, List<Map<String, Object>> maps, String full, int[] contentEnd,
                           int i, Renderer renderer, Closings closings, Object context) {
        // the anchor: the content end of this message, else of the last one before it with content, else the start
        int anchorIndex = i;
        while (anchorIndex >= 0 && messages.get(anchorIndex).content().isEmpty()) anchorIndex--;
        if (anchorIndex >= 0 && contentEnd[anchorIndex] < 0) return -1;
        int base = anchorIndex < 0 ? 0 : contentEnd[anchorIndex];
        String anchor = anchorIndex < 0 ? "" : mark(i - anchorIndex);
        // the messages from the anchor's (or the one before this one) on; where the template refuses to start there
        // (roles that must alternate from a user turn, tools that go into the first user turn) or closes the message
        // otherwise than the prompt does (a system message that is first), from up to CONTEXT - 1 messages earlier;
        // last, those after the last user turn before them (a template can render a turn by whether a user query
        // precedes it: Qwen3)
        int first = Math.max(0, Math.min(anchorIndex, i - 1));
        int widest = Math.max(0, first - (CONTEXT - 1));
        for (int start = first; start >= widest; start--) {
            int end = endFrom(-1, start, messages, maps, full, i, base, anchor, renderer, closings, context);
            if (end >= 0) return end;
        }
        int user = widest - 1;
        while (user >= 0 && !"user".equals(messages.get(user).role())) user--;
        for (int start = first; user >= 0 && start >= widest; start--) {
            int end = endFrom(user, start, messages, maps, full, i, base, anchor, renderer, closings, context);
            if (end >= 0) return end;
        }
        return -1;
    }

    /**
     * Message i's end when messages start..i (after message {@code lead}, unless −1) render after {@code base} in full
     * as they do in that window, or -1.
     */
    private static int endFrom(int lead, int start, List<ChatMessage> messages, List<Map<String, Object>> maps, String full,
                               int i, int base, String anchor, Renderer renderer, Closings closings, Object context) {
        List<Object> window = new ArrayList<>(i + 2 - start);
        for (int j = lead < 0 ? start : lead; j <= i; j = j == lead ? start : j + 1) {
            boolean empty = messages.get(j).content().isEmpty();
            window.add(empty ? maps.get(j) : withContent(maps.get(j), j == lead ? LEAD_MARK : mark(i - j)));
        }
        List<Object> key = List.of(window, context);
        Optional<String> closing = closings.get(key);
        if (closing == null) {
            closing = closing(window, anchor, renderer);
            closings.put(key, closing);
        }
        return closing.isPresent() && full.startsWith(closing.get(), base) ? base + closing.get().length() : -1;
    }

    /**
     * What the template writes after the anchor mark when it renders {@code window} (a message and a few before it,
     * their contents replaced by marks) without the generation prompt, or empty when it refuses them or does not
     * write the anchor once; with no anchor (no content before), all it writes.
     */
    private static Optional<String> closing(List<Object> window, String anchor, Renderer renderer) {
        Optional<String> rendered = render(window, renderer);
        if (rendered.isEmpty()) return rendered;
        String alone = rendered.get();
        if (anchor.isEmpty()) return hasMarkPlane(alone) ? Optional.empty() : rendered;   // from the start: all of it
        int at = alone.indexOf(anchor);
        if (at < 0 || alone.indexOf(anchor, at + 1) >= 0) return Optional.empty();
        String closing = alone.substring(at + anchor.length());
        if (hasMarkPlane(closing)) return Optional.empty();   // the other mark after this one: reordered
        return Optional.of(closing);
    }

    /** The messages rendered without the generation prompt, or empty when the template refuses them. */
    private static Optional<String> render(List<Object> messages, Renderer renderer) {
        try {
            return Optional.of(renderer.render(messages, false));
        } catch (InvalidInputException e) {
            return Optional.empty();   // e.g. a template that wants roles to alternate from a user turn
        }
    }

    /**
     * The closings learned from renders of a few messages, by those messages (contents replaced by marks) and the render's
     * other inputs ({@code context}: tools, thinking mode): a conversation's messages differ in content, rarely in
     * shape, so a template's later requests reuse them. Bounded (least recently used out), thread-safe.
     */
    static final class Closings {
        private static final int CAPACITY = 64;
        private final Map<List<Object>, Optional<String>> map = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<List<Object>, Optional<String>> eldest) {
                return size() > CAPACITY;
            }
        };

        synchronized Optional<String> get(List<Object> key) { return map.get(key); }

        synchronized void put(List<Object> key, Optional<String> closing) { map.put(key, closing); }
    }

    /** Where the first message after i with a marked content starts (its content may start later), or no bound. */
    private static int nextContentStart(int[] contentStart, int i) {
        for (int j = i + 1; j < contentStart.length; j++) {
            if (contentStart[j] >= 0) return contentStart[j];
        }
        return Integer.MAX_VALUE;
    }

    /**
     * For each marked message, where its mark stands in {@code withMarks} once all marks are removed; null unless the
     * removal leaves exactly {@code full} and each marked message's mark occurs once, in message order.
     */
    private static int[] markPlaces(String withMarks, String full, boolean[] marked) {
        int[] at = new int[marked.length];
        Arrays.fill(at, -1);
        int out = 0;      // chars of full matched so far
        int lastMark = -1;
        for (int p = 0; p < withMarks.length(); ) {
            int cp = withMarks.codePointAt(p);
            int k = cp - MARK_BASE;
            if (k >= 0 && k < marked.length) {
                if (!marked[k] || at[k] >= 0 || k <= lastMark) return null;
                at[k] = out;
                lastMark = k;
                p += Character.charCount(cp);
                continue;
            }
            if (isMarkPlaneUnit(withMarks.charAt(p))) return null;   // a stray code point of the marks' planes
            if (out >= full.length() || full.charAt(out) != withMarks.charAt(p)) return null;
            out++;
            p++;
        }
        if (out != full.length()) return null;
        for (int i = 0; i < marked.length; i++) if (marked[i] && at[i] < 0) return null;
        return at;
    }

    private static Map<String, Object> withContent(Map<String, Object> message, String content) {
        Map<String, Object> copy = new LinkedHashMap<>(message);
        copy.put("content", content);
        return copy;
    }

    static String mark(int index) {
        return Character.toString(MARK_BASE + index);
    }

    /** Whether text holds any code point of planes 15–16 (a high surrogate U+DB80…U+DBFF). */
    private static boolean hasMarkPlane(String text) {
        for (int i = 0; i < text.length(); i++) if (isMarkPlaneUnit(text.charAt(i))) return true;
        return false;
    }

    private static boolean isMarkPlaneUnit(char c) {
        return c >= 0xDB80 && c <= 0xDBFF;
    }
}
