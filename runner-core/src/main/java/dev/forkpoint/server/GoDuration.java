package dev.forkpoint.server;

import java.time.Duration;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A duration as Ollama reads {@code keep_alive} and {@code OLLAMA_KEEP_ALIVE}: Go's {@code time.ParseDuration} syntax
 * ("5m", "1h30m", "300ms", "1.5h", "-1m"), or a bare number of seconds ("300", "-1", "2.5").
 */
public final class GoDuration {
    private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|µs|ms|s|m|h)");

    private GoDuration() {}

    /** The duration {@code text} spells (trimmed), or empty when it is no duration (blank, bad unit, not finite). */
    public static Optional<Duration> parse(String text) {
        if (text == null) return Optional.empty();
        String s = text.trim();
        if (s.isEmpty()) return Optional.empty();
        if (s.matches("[+-]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][+-]?\\d+)?")) return seconds(Double.parseDouble(s));
        boolean negative = s.startsWith("-");
        String rest = negative || s.startsWith("+") ? s.substring(1) : s;
        if (rest.isEmpty()) return Optional.empty();
        Matcher m = PART.matcher(rest);
        double nanos = 0;
        int at = 0;
        while (at < rest.length()) {
            if (!m.find(at) || m.start() != at) return Optional.empty();
            double n = Double.parseDouble(m.group(1));
            nanos += n * switch (m.group(2)) {
                case "ns" -> 1;
                case "us", "µs" -> 1e3;
                case "ms" -> 1e6;
                case "s" -> 1e9;
                case "m" -> 60e9;
                default -> 3600e9;
            };
            at = m.end();
        }
        if (!Double.isFinite(nanos)) return Optional.empty();
        return Optional.of(Duration.ofNanos((long) (negative ? -nanos : nanos)));
    }

    /** A number of seconds as a duration (beyond ±292 years: saturated), or empty when it is not finite. */
    public static Optional<Duration> seconds(double s) {
        if (!Double.isFinite(s)) return Optional.empty();
        return Optional.of(Duration.ofNanos((long) (s * 1e9)));
    }
}
