package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.http.Context;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * The request body, read once with the server's size limit (413 beyond it, whether the client declared the length or
 * streamed it chunked) and kept on the request for every later reader (route dispatch by body shape, the handler).
 */
public final class RequestBody {
    private static final String BYTES = "forkpoint.body";
    private static final String TREE = "forkpoint.tree";
    static final String LIMIT = "forkpoint.bodyLimit";

    private RequestBody() {}

    /** The raw body bytes. */
    public static byte[] bytes(Context ctx) {
        byte[] cached = ctx.attribute(BYTES);
        if (cached != null) return cached;
        Long limitAttr = ctx.attribute(LIMIT);
        long limit = limitAttr == null ? ServerConfig.DEFAULT_MAX_BODY_BYTES : limitAttr;
        long declared = ctx.req().getContentLengthLong();
        if (declared > limit) throw new PayloadTooLargeException(limit);
        try (InputStream in = ctx.req().getInputStream()) {
            ByteArrayOutputStream out = new ByteArrayOutputStream(declared > 0 ? (int) declared : 1024);
            byte[] buf = new byte[16384];
            long total = 0;
            for (int n; (n = in.read(buf)) > 0; ) {
                total += n;
                if (total > limit) throw new PayloadTooLargeException(limit);
                out.write(buf, 0, n);
            }
            byte[] body = out.toByteArray();
            ctx.attribute(BYTES, body);
            return body;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the request body: " + e.getMessage(), e);
        }
    }

    /** The body parsed as JSON (400 when malformed), parsed once. */
    public static JsonNode tree(Context ctx) {
        JsonNode cached = ctx.attribute(TREE);
        if (cached != null) return cached;
        JsonNode tree = Json.parse(bytes(ctx));
        ctx.attribute(TREE, tree);
        return tree;
    }

    /** The body parsed as JSON, or null when it is empty or not JSON (for dispatch, which must not fail). */
    static JsonNode treeOrNull(Context ctx) {
        try {
            return tree(ctx);
        } catch (dev.forkpoint.InvalidInputException e) {
            return null;
        }
    }
}
