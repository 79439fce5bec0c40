package dev.forkpoint.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code pre_tokenizer} of a Hugging Face tokenizer: splits a piece of normalized text into the words the model
 * encodes one by one (and may rewrite them, as ByteLevel does). Never produces empty words.
 */
sealed interface HfPreTokenizer {
    /** A word and whether it begins the input (Metaspace's {@code prepend_scheme: first} looks at that). */
    record Word(String text, boolean atStart) {}

    /** GPT-2's split expression, which ByteLevel with {@code use_regex} applies. */
    Pattern GPT2 = OnigRegex.compile("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");

    List<Word> split(List<Word> words);

    enum Behavior { REMOVED, ISOLATED, MERGED_WITH_PREVIOUS, MERGED_WITH_NEXT, CONTIGUOUS }

    /** No pre-tokenization: each piece is one word. */
    record None() implements HfPreTokenizer {
        public List<Word> split(List<Word> words) { return words; }
    }

    /** Applies each in order. */
    record Sequence(List<HfPreTokenizer> steps) implements HfPreTokenizer {
        public List<Word> split(List<Word> words) {
            for (HfPreTokenizer step : steps) words = step.split(words);
            return words;
        }
    }

    /** Splits at the matches of a pattern; what happens to the matches is {@code behavior}. */
    record Split(Pattern pattern, Behavior behavior, boolean invert) implements HfPreTokenizer {
        public List<Word> split(List<Word> words) {
            List<Word> out = new ArrayList<>();
            for (Word w : words) splitWord(w, pattern, behavior, invert, out);
            return out;
        }
    }

    /**
     * GPT-2's byte level: optionally a space before the piece, optionally GPT-2's split expression, then every
     * word's UTF-8 bytes written as GPT-2's byte characters.
     */
    record ByteLevel(boolean addPrefixSpace, boolean useRegex) implements HfPreTokenizer {
        public List<Word> split(List<Word> words) {
            List<Word> out = new ArrayList<>();
            for (Word w : words) {
                String text = addPrefixSpace && !w.text.startsWith(" ") ? " " + w.text : w.text;
                List<Word> parts = new ArrayList<>();
                if (useRegex) splitWord(new Word(text, w.atStart), GPT2, Behavior.ISOLATED, false, parts);
                else parts.add(new Word(text, w.atStart));
                for (Word p : parts) out.add(new Word(ByteUnicode.encode(p.text.getBytes(StandardCharsets.UTF_8)), p.atStart));
            }
            return out;
        }
    }

    enum PrependScheme { ALWAYS, FIRST, NEVER }

    /** SentencePiece's spaces: ' ' becomes {@code replacement}, which may be prepended and may start each word. */
    record Metaspace(char replacement, PrependScheme prependScheme, boolean split) implements HfPreTokenizer {
        public List<Word> split(List<Word> words) {
            List<Word> out = new ArrayList<>();
            String mark = String.valueOf(replacement);
            for (Word w : words) {
                String text = w.text.replace(" ", mark);
                boolean prepend = switch (prependScheme) {
                    case ALWAYS -> true;
                    case FIRST -> w.atStart;
                    case NEVER -> false;
                };
                if (prepend && !text.startsWith(mark)) text = mark + text;
                Word replaced = new Word(text, w.atStart);
                if (split) splitWord(replaced, Pattern.compile(Pattern.quote(mark)), Behavior.MERGED_WITH_NEXT, false, out);
                else out.add(replaced);
            }
            return out;
        }
    }

    /** Digits apart from the rest: each digit alone ({@code individual_digits}) or runs of digits. */
    record Digits(boolean individual) implements HfPreTokenizer {
        private static final Pattern ONE = Pattern.compile("\\p{Nd}", Pattern.UNICODE_CHARACTER_CLASS);
        private static final Pattern RUN = Pattern.compile("\\p{Nd}+", Pattern.UNICODE_CHARACTER_CLASS);

        public List<Word> split(List<Word> words) {
            List<Word> out = new ArrayList<>();
            for (Word w : words) splitWord(w, individual ? ONE : RUN, individual ? Behavior.ISOLATED : Behavior.CONTIGUOUS, false, out);
            return out;
        }
    }

    /**
     * Splits one word into the spans between and at the matches of {@code pattern}, then combines them as
     * {@code behavior} says; empty results are dropped.
     */
    private static void splitWord(Word word, Pattern pattern, Behavior behavior, boolean invert, List<Word> out) {
        String s = word.text;
        if (s.isEmpty()) return;
        // (start, end, isMatch) spans covering s in order
        List<int[]> spans = new ArrayList<>();
        Matcher m = pattern.matcher(s);
        int prev = 0;
        while (m.find()) {
            if (m.start() == m.end()) continue;
            if (prev != m.start()) spans.add(new int[]{prev, m.start(), 0});
            spans.add(new int[]{m.start(), m.end(), 1});
            prev = m.end();
        }
        if (prev != s.length()) spans.add(new int[]{prev, s.length(), 0});
        if (invert) for (int[] span : spans) span[2] ^= 1;

        List<int[]> pieces = new ArrayList<>();
        switch (behavior) {
            case ISOLATED -> pieces.addAll(spans);
            case REMOVED -> { for (int[] span : spans) if (span[2] == 0) pieces.add(span); }
            case CONTIGUOUS -> {
                int previous = -1;
                for (int[] span : spans) {
                    if (span[2] == previous && !pieces.isEmpty()) pieces.getLast()[1] = span[1];
                    else pieces.add(span.clone());
                    previous = span[2];
                }
            }
            case MERGED_WITH_PREVIOUS -> {
                boolean previousMatch = false;
                for (int[] span : spans) {
                    if (span[2] == 1 && !previousMatch && !pieces.isEmpty()) pieces.getLast()[1] = span[1];
                    else pieces.add(span.clone());
                    previousMatch = span[2] == 1;
                }
            }
            case MERGED_WITH_NEXT -> {
                boolean previousMatch = false;
                List<int[]> reversed = new ArrayList<>();
                for (int k = spans.size() - 1; k >= 0; k--) {
                    int[] span = spans.get(k);
                    if (span[2] == 1 && !previousMatch && !reversed.isEmpty()) reversed.getLast()[0] = span[0];
                    else reversed.add(span.clone());
                    previousMatch = span[2] == 1;
                }
                pieces.addAll(reversed.reversed());
            }
        }
        for (int[] p : pieces) {
            if (p[1] > p[0]) out.add(new Word(s.substring(p[0], p[1]), word.atStart && p[0] == 0));
        }
    }
}
