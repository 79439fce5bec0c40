package dev.forkpoint.tokenizer;

import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Translates the Oniguruma regular expressions of Hugging Face tokenizer files into {@link java.util.regex}.
 * The two dialects agree on what tokenizer patterns use ({@code \p{L}}, {@code \s}, {@code (?i:…)}, look-ahead,
 * bounded repeats), given {@link Pattern#UNICODE_CHARACTER_CLASS}; the differences handled here are Oniguruma's
 * {@code \h} (a hex digit, horizontal space in Java) and script names written without Java's {@code Is} prefix.
 */
final class OnigRegex {
    private OnigRegex() {}

    /** The Java pattern for an Oniguruma expression; {@link PatternSyntaxException} when Java cannot express it. */
    static Pattern compile(String onig) {
        return Pattern.compile(translate(onig), Pattern.UNICODE_CHARACTER_CLASS);
    }

    static String translate(String onig) {
        StringBuilder out = new StringBuilder(onig.length() + 8);
        for (int i = 0; i < onig.length(); i++) {
            char c = onig.charAt(i);
            if (c != '\\' || i + 1 == onig.length()) {
                out.append(c);
                continue;
            }
            char e = onig.charAt(++i);
            if (e == 'h') {
                out.append("[0-9a-fA-F]");
            } else if (e == 'H') {
                out.append("[^0-9a-fA-F]");
            } else if ((e == 'p' || e == 'P') && i + 1 < onig.length() && onig.charAt(i + 1) == '{') {
                int close = onig.indexOf('}', i + 2);
                if (close < 0) throw new PatternSyntaxException("unclosed property name", onig, i);
                String name = onig.substring(i + 2, close);
                boolean negated = name.startsWith("^");
                if (negated) name = name.substring(1);
                out.append('\\').append(negated ? (e == 'p' ? 'P' : 'p') : e).append('{').append(javaProperty(name)).append('}');
                i = close;
            } else {
                out.append('\\').append(e);
            }
        }
        return out.toString();
    }

    /** General categories stay as they are; a script name gets Java's {@code Is} prefix. */
    private static String javaProperty(String name) {
        if (name.length() <= 2 || name.startsWith("Is") || name.startsWith("In") || name.contains("=")) return name;
        try {
            Character.UnicodeScript.forName(name);
            return "Is" + name;
        } catch (IllegalArgumentException notAScript) {
            return name;
        }
    }
}
