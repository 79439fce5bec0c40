package dev.forkpoint.server;

import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.handler.ErrorHandler;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Errors Jetty answers itself, before any route runs (a malformed request line, an unsupported HTTP version such as
 * HTTP/0.9, headers too large, a URI too long), as {@code {"error": "..."}} JSON — the shape Ollama clients read —
 * instead of Jetty's HTML page. Nothing of the server's internals is shown.
 */
final class JsonErrorHandler extends ErrorHandler {
    JsonErrorHandler() {
        setShowStacks(false);
        setShowServlet(false);
    }

    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
        fields.put(HttpHeader.CONTENT_TYPE, "application/json");
        return ByteBuffer.wrap(body(status, reason));
    }

    @Override
    public void handle(String target, Request baseRequest, HttpServletRequest request, HttpServletResponse response) throws IOException {
        baseRequest.setHandled(true);
        int status = response.getStatus();
        Object message = request.getAttribute("jakarta.servlet.error.message");
        response.setContentType("application/json");
        response.getOutputStream().write(body(status, message == null ? null : message.toString()));
    }

    private static byte[] body(int status, String reason) {
        String text = HttpStatus.getMessage(status);
        if (reason != null && !reason.isBlank() && !reason.equals(text)) text = text + ": " + reason;
        return (Json.write(Map.of("error", text)) + "\n").getBytes(StandardCharsets.UTF_8);
    }
}
