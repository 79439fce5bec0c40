package dev.forkpoint.bench.soak;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * What came back on one connection.
 *
 * @param status     the HTTP status, or -1 when no status line arrived
 * @param headers    response headers, names in lower case (the last value of a repeated one)
 * @param body       the body, de-chunked (at most {@link RawHttp#BODY_CAP} bytes are kept)
 * @param bodyBytes  body bytes received in all
 * @param ending     how the exchange ended
 * @param detail     for the endings other than COMPLETE: what happened, in words
 * @param ttfbNanos  request sent → status line (or -1)
 * @param totalNanos request sent → the end
 */
record RawResponse(int status, Map<String, String> headers, byte[] body, long bodyBytes, Ending ending, String detail,
                   long ttfbNanos, long totalNanos) {
    enum Ending {
        /** The whole response arrived. */
        COMPLETE,
        /** The client closed the connection on purpose ({@link ReadPlan}), before the response was complete. */
        DROPPED,
        /** The deadline passed before the response was complete. */
        TIMEOUT,
        /** The connection was refused, reset, or closed by the server before the response was complete. */
        RESET
    }

    String bodyText() { return new String(body, StandardCharsets.UTF_8); }

    String header(String name) { return headers.get(name); }
}
