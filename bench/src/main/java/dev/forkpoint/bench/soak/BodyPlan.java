package dev.forkpoint.bench.soak;

import java.nio.charset.StandardCharsets;

/**
 * How a request body goes out on the wire, including the ways a faulty client sends one. The plan adds its own framing
 * header ({@code Content-Length} or {@code Transfer-Encoding}); {@link Raw} adds none and sends its bytes as given.
 */
sealed interface BodyPlan {
    /** No body and no framing header. */
    record None() implements BodyPlan {}

    /** {@code Content-Length: bytes.length}, then the bytes. */
    record Whole(byte[] bytes) implements BodyPlan {}

    /** Valid chunked framing, {@code chunk} bytes a chunk, then the final zero-size chunk. */
    record Chunked(byte[] bytes, int chunk) implements BodyPlan {}

    /** {@code Content-Length: declared} (more than {@code bytes.length}), the bytes, then the client half-closes. */
    record Truncated(byte[] bytes, long declared) implements BodyPlan {}

    /** {@code Content-Length: declared}, the first few bytes, then nothing: the connection stays open, the body never ends. */
    record Stalled(byte[] prefix, long declared) implements BodyPlan {}

    /** Bytes sent exactly as given after the header lines (framing headers are the caller's); then a half-close if asked. */
    record Raw(byte[] bytes, boolean halfClose) implements BodyPlan {}

    static BodyPlan json(String text) {
        return new Whole(text.getBytes(StandardCharsets.UTF_8));
    }
}
