package dev.forkpoint.tokenizer;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Cuts added tokens out of text as the Hugging Face {@code tokenizers} library does: one left-to-right scan taking,
 * at the leftmost position where any token matches, the longest match; a special token met while special text is
 * not parsed still consumes its match but stays text. Then {@code single_word}, {@code lstrip} and {@code rstrip}
 * apply. Pieces are never empty.
 */
final class AddedTokenSplitter {
    /** A piece of input: plain text ({@code id} -1) or an added token; {@code atStart}: begins the input. */
    record Part(String text, int id, boolean atStart) {
        boolean isToken() { return id >= 0; }
    }

    private record Entry(String pattern, AddedToken token) {}

    /** Entries by first char, longest pattern first. */
    private final Map<Character, List<Entry>> byFirstChar = new HashMap<>();

    /** {@code patterns[i]} is the text {@code tokens[i]} is matched by (its content, or its normalized content). */
    AddedTokenSplitter(List<AddedToken> tokens, List<String> patterns) {
        for (int i = 0; i < tokens.size(); i++) {
            String p = patterns.get(i);
            if (p.isEmpty()) continue;
            byFirstChar.computeIfAbsent(p.charAt(0), k -> new ArrayList<>()).add(new Entry(p, tokens.get(i)));
        }
        for (List<Entry> list : byFirstChar.values()) {
            list.sort(Comparator.comparingInt((Entry e) -> e.pattern.length()).reversed());
        }
    }

    boolean isEmpty() { return byFirstChar.isEmpty(); }

    /** Splits {@code text} (which begins the input when {@code atStart}), adding the parts to {@code out}. */
    void split(String text, boolean atStart, boolean parseSpecial, List<Part> out) {
        if (byFirstChar.isEmpty()) {
            if (!text.isEmpty()) out.add(new Part(text, -1, atStart));
            return;
        }
        int textStart = 0; // start of the text not yet emitted
        int i = 0;
        while (i < text.length()) {
            Entry hit = longestAt(text, i);
            if (hit == null) {
                i++;
                continue;
            }
            int start = i, stop = i + hit.pattern.length();
            i = stop;
            AddedToken token = hit.token;
            if (token.special() && !parseSpecial) continue;
            if (token.singleWord() && (isWordCharBefore(text, start) || isWordCharAt(text, stop))) continue;
            if (token.lstrip()) {
                int s = start;
                while (s > textStart && AddedToken.isWhitespace(text.codePointBefore(s))) s -= Character.charCount(text.codePointBefore(s));
                start = s;
            }
            if (token.rstrip()) {
                while (stop < text.length() && AddedToken.isWhitespace(text.codePointAt(stop))) stop += Character.charCount(text.codePointAt(stop));
                i = stop;
            }
            if (start > textStart) out.add(new Part(text.substring(textStart, start), -1, atStart && textStart == 0));
            out.add(new Part(text.substring(start, stop), token.id(), atStart && start == 0));
            textStart = stop;
        }
        if (textStart < text.length()) out.add(new Part(text.substring(textStart), -1, atStart && textStart == 0));
    }

    private Entry longestAt(String text, int i) {
        List<Entry> candidates = byFirstChar.get(text.charAt(i));
        if (candidates == null) return null;
        for (Entry e : candidates) if (text.startsWith(e.pattern, i)) return e;
        return null;
    }

    private static boolean isWordCharBefore(String text, int at) {
        return at > 0 && isWordChar(text.codePointBefore(at));
    }

    private static boolean isWordCharAt(String text, int at) {
        return at < text.length() && isWordChar(text.codePointAt(at));
    }

    private static final java.util.regex.Pattern WORD_CHAR =
            java.util.regex.Pattern.compile("\\w", java.util.regex.Pattern.UNICODE_CHARACTER_CLASS);

    /** Unicode {@code \w} (letters, marks, decimal digits, connector punctuation, joiners), as the HF library tests. */
    private static boolean isWordChar(int c) {
        return WORD_CHAR.matcher(Character.toString(c)).matches();
    }
}
