package dev.forkpoint.server.ollama;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.GoDuration;
import dev.forkpoint.server.Json;

import java.time.Duration;

/**
 * Ollama's {@code keep_alive}: a number of seconds, or a duration string as Go writes it ("5m", "1h30m", "300ms",
 * "-1", a bare number = seconds). Negative = keep loaded forever, 0 = unload after the request, absent = the server's
 * default.
 */
final class KeepAlive {
    private KeepAlive() {}

    /** null when absent or JSON null. */
    static Duration parse(JsonNode v) {
        if (v == null || v.isNull() || v.isMissingNode()) return null;
        if (v.isNumber()) {
            return GoDuration.seconds(v.asDouble()).orElseThrow(() -> new BadFieldException("keep_alive",
                    "keep_alive must be a finite number of seconds, got " + Json.describe(v)));
        }
        if (!v.isTextual()) throw bad(v);
        if (v.asText().isBlank()) return null;
        return GoDuration.parse(v.asText()).orElseThrow(() -> bad(v));
    }

    private static BadFieldException bad(JsonNode v) {
        return new BadFieldException("keep_alive", "keep_alive must be seconds or a duration such as \"5m\" or \"1h30m\" (negative = forever, 0 = unload now), got " + Json.describe(v));
    }
}
