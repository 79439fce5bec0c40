package dev.forkpoint.bench;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One line of the timing report llama.cpp's server code logs when a completion ends, e.g.
 * {@code prompt eval time =   812.40 ms /   512 tokens (...)} or {@code        eval time =  6210.77 ms /   128 tokens}.
 *
 * @param prompt true for the prompt-evaluation line, false for the generation line
 */
record LlamaCppTimings(boolean prompt, double millis, int tokens) {
    private static final Pattern LINE = Pattern.compile("^\\s*(prompt eval|eval) time\\s*=\\s*([0-9.]+) ms /\\s*([0-9]+) tokens");

    static Optional<LlamaCppTimings> parse(String line) {
        Matcher m = LINE.matcher(line);
        if (!m.find()) return Optional.empty();
        return Optional.of(new LlamaCppTimings(m.group(1).equals("prompt eval"), Double.parseDouble(m.group(2)),
                Integer.parseInt(m.group(3))));
    }

    long nanos() { return Math.round(millis * 1e6); }
}
