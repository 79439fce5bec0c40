package dev.forkpoint.server.ollama;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.Json;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Ollama's {@code keep_alive}: a number of seconds, or a duration string as Go writes it ("5m", "1h30m", "300ms",
 * "-1", a bare number = seconds). Negative = keep loaded forever, 0 = unload after the request, absent = the server's
 * default.
 */
final class KeepAlive {
    private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|µs|ms|s|m|h)");

    private KeepAlive() {}

    /** null when absent or JSON null. */
    static Duration parse(JsonNode v) {
        if (v == null || v.isNull() || v.isMissingNode()) return null;
        if (v.isNumber()) return seconds(v.asDouble());
        if (!v.isTextual()) throw bad(v);
        String s = v.asText().trim();
        if (s.isEmpty()) return null;
        try {
            return seconds(Double.parseDouble(s));
        } catch (NumberFormatException notANumber) {
            // a duration string
        }
        boolean negative = s.startsWith("-");
        String rest = negative || s.startsWith("+") ? s.substring(1) : s;
        Matcher m = PART.matcher(rest);
        double nanos = 0;
        int at = 0;
        while (at < rest.length()) {
            if (!m.find(at) || m.start() != at) throw bad(v);
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
        if (rest.isEmpty()) throw bad(v);
        return Duration.ofNanos((long) (negative ? -nanos : nanos));
    }

    private static Duration seconds(double s) {
        if (!Double.isFinite(s)) throw new BadFieldException("keep_alive", "keep_alive must be a finite number of seconds, got " + s);
        return Duration.ofNanos((long) (s * 1e9));
    }

    private static BadFieldException bad(JsonNode v) {
        return new BadFieldException("keep_alive", "keep_alive must be seconds or a duration such as \"5m\" or \"1h30m\" (negative = forever, 0 = unload now), got " + Json.describe(v));
    }
}
