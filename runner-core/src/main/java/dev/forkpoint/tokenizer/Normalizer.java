package dev.forkpoint.tokenizer;

import java.text.Normalizer.Form;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The {@code normalizer} of a Hugging Face tokenizer: text → text, applied to each piece between added tokens. */
sealed interface Normalizer {
    String apply(String text);

    /** No normalization. */
    record None() implements Normalizer {
        public String apply(String text) { return text; }
    }

    /** Applies each in order. */
    record Sequence(List<Normalizer> normalizers) implements Normalizer {
        public String apply(String text) {
            for (Normalizer n : normalizers) text = n.apply(text);
            return text;
        }
    }

    /** Puts {@code prefix} before text that is not empty. */
    record Prepend(String prefix) implements Normalizer {
        public String apply(String text) { return text.isEmpty() ? text : prefix + text; }
    }

    /** Replaces every match of {@code pattern} with {@code content}. */
    record Replace(Pattern pattern, String content) implements Normalizer {
        public String apply(String text) { return pattern.matcher(text).replaceAll(Matcher.quoteReplacement(content)); }
    }

    /** A Unicode normalization form. */
    record Unicode(Form form) implements Normalizer {
        public String apply(String text) { return java.text.Normalizer.normalize(text, form); }
    }

    /** Lower case, as Rust's {@code str::to_lowercase} (locale-independent). */
    record Lowercase() implements Normalizer {
        public String apply(String text) { return text.toLowerCase(Locale.ROOT); }
    }

    /** Removes leading and/or trailing whitespace. */
    record Strip(boolean left, boolean right) implements Normalizer {
        public String apply(String text) {
            int from = 0, to = text.length();
            while (left && from < to && AddedToken.isWhitespace(text.codePointAt(from))) from += Character.charCount(text.codePointAt(from));
            while (right && to > from && AddedToken.isWhitespace(text.codePointBefore(to))) to -= Character.charCount(text.codePointBefore(to));
            return text.substring(from, to);
        }
    }
}
