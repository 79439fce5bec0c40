package dev.forkpoint.bench.soak;

import java.util.List;

/**
 * One HTTP/1.1 request as bytes on a fresh connection: the request line, {@code headers} as given (the Host line
 * among them, or not), the body's framing header from {@code body}, {@code Connection: close}.
 */
record RawRequest(String method, String target, List<String> headers, BodyPlan body) {
    RawRequest {
        headers = List.copyOf(headers);
    }
}
