package dev.forkpoint.server;

import io.javalin.http.Context;

/**
 * Writes an {@link ApiError} in one API's shape (Ollama {@code {"error":"…"}}, OpenAI {@code {"error":{"message",…}}},
 * …). Status and the Retry-After header are set by the core before it is called; it writes the body only.
 */
@FunctionalInterface
public interface ErrorRenderer {
    void render(Context ctx, ApiError error);
}
