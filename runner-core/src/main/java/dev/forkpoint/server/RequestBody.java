package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.http.Context;
import org.eclipse.jetty.server.HttpChannel;
import org.eclipse.jetty.server.Request;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The request body, read once with the server's limits and kept on the request for every later reader (route dispatch
 * by body shape, the handler). Limits: the size (413 beyond it, whether the client declared the length or streamed it
 * chunked), the time ({@link RequestGuards#bodyTimeout()} without progress or {@link RequestGuards#bodyDeadline()} in
 * all: 408) and the bodies read at once per remote address ({@link RequestGuards#bodiesPerClient()}: 429). A body
 * that ends early or whose chunked framing is broken is the client's error (400), never a 500. After any of these the
 * connection is closed: its framing can no longer be trusted.
 */
public final class RequestBody {
    private static final String BYTES = "forkpoint.body";
    private static final String TREE = "forkpoint.tree";
    static final String READER = "forkpoint.bodyReader";

    private RequestBody() {}

    /** The server's body limits and the count of bodies each client has in flight. */
    static final class Reader {
        final long maxBytes;
        final RequestGuards guards;
        private final ConcurrentHashMap<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();

        Reader(long maxBytes, RequestGuards guards) {
            this.maxBytes = maxBytes;
            this.guards = guards;
        }
    }

    /** The raw body bytes. */
    public static byte[] bytes(Context ctx) {
        byte[] cached = ctx.attribute(BYTES);
        if (cached != null) return cached;
        Reader reader = ctx.attribute(READER);   // set by the server for every route
        if (reader == null) reader = new Reader(ServerConfig.DEFAULT_MAX_BODY_BYTES, RequestGuards.defaults());
        long limit = reader.maxBytes;
        long declared = ctx.req().getContentLengthLong();
        if (declared > limit) throw new PayloadTooLargeException(limit);
        if (declared == 0) return remember(ctx, new byte[0]);
        String client = ctx.req().getRemoteAddr();
        AtomicInteger count = reader.inFlight.computeIfAbsent(client, k -> new AtomicInteger());
        if (count.incrementAndGet() > reader.guards.bodiesPerClient()) {
            release(reader, client, count);
            closeAfterwards(ctx);
            throw new TooManyRequestsException("too many request bodies in flight from " + client + " (at most "
                    + reader.guards.bodiesPerClient() + " at once); finish sending the others first");
        }
        HttpChannel channel = channel(ctx);
        long idleBefore = channel == null ? 0 : channel.getIdleTimeout();
        long timeoutMs = reader.guards.bodyTimeout().toMillis();
        long deadline = System.nanoTime() + reader.guards.bodyDeadline().toNanos();
        if (channel != null) channel.setIdleTimeout(timeoutMs);
        long total = 0;
        try (InputStream in = ctx.req().getInputStream()) {
            ByteArrayOutputStream out = new ByteArrayOutputStream(declared > 0 ? (int) Math.min(declared, 1 << 20) : 1024);
            byte[] buf = new byte[16384];
            for (int n; (n = in.read(buf)) > 0; ) {
                total += n;
                if (total > limit) {
                    closeAfterwards(ctx);
                    throw new PayloadTooLargeException(limit);
                }
                out.write(buf, 0, n);
                if (System.nanoTime() - deadline > 0 && (declared < 0 || total < declared)) {
                    closeAfterwards(ctx);
                    throw new RequestTimeoutException("the request body did not arrive within "
                            + reader.guards.bodyDeadline().toSeconds() + " s (" + total + " bytes received)");
                }
            }
            if (declared > 0 && total < declared) {
                closeAfterwards(ctx);
                throw new BadFieldException("", "the request body ended after " + total + " of the " + declared
                        + " bytes its Content-Length announced");
            }
            return remember(ctx, out.toByteArray());
        } catch (IOException | RuntimeException e) {
            if (e instanceof PayloadTooLargeException || e instanceof RequestTimeoutException || e instanceof BadFieldException) {
                throw (RuntimeException) e;
            }
            closeAfterwards(ctx);
            if (causedBy(e, TimeoutException.class)) {
                throw new RequestTimeoutException("the request body stalled: no bytes for " + reader.guards.bodyTimeout().toSeconds()
                        + " s (" + total + " bytes received" + (declared > 0 ? " of " + declared : "") + ")");
            }
            String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            throw new BadFieldException("", "the request body could not be read (" + why + ") after " + total + " bytes"
                    + (declared > 0 ? " of the " + declared + " announced" : "") + "; check its Content-Length or chunked framing");
        } finally {
            release(reader, client, count);
            if (channel != null) channel.setIdleTimeout(idleBefore);
        }
    }

    /** Whether the body has been read to its end (or there is none), so that nothing more of this request is in flight. */
    static boolean consumed(Context ctx) {
        if (ctx.attribute(BYTES) != null) return true;
        long declared = ctx.req().getContentLengthLong();
        return declared == 0 || (declared < 0 && ctx.req().getHeader("Transfer-Encoding") == null);
    }

    /** The body parsed as JSON (400 when malformed), parsed once. */
    public static JsonNode tree(Context ctx) {
        JsonNode cached = ctx.attribute(TREE);
        if (cached != null) return cached;
        JsonNode tree = Json.parse(bytes(ctx));
        ctx.attribute(TREE, tree);
        return tree;
    }

    /** The body parsed as JSON, or null when it is empty or not JSON (for dispatch, which must not fail on it). */
    static JsonNode treeOrNull(Context ctx) {
        try {
            return tree(ctx);
        } catch (BadFieldException e) {
            if (ctx.attribute(BYTES) == null) throw e;   // the body could not be read: that is the answer
            return null;
        } catch (dev.forkpoint.InvalidInputException e) {
            return null;
        }
    }

    private static byte[] remember(Context ctx, byte[] body) {
        ctx.attribute(BYTES, body);
        return body;
    }

    private static void release(Reader reader, String client, AtomicInteger count) {
        if (count.decrementAndGet() <= 0) reader.inFlight.remove(client, count);
    }

    static final String CLOSE = "forkpoint.closeConnection";

    /** Marks the connection to be closed after this response (the server's error path sets the header again after a reset). */
    static void closeAfterwards(Context ctx) {
        ctx.attribute(CLOSE, Boolean.TRUE);
        ctx.res().setHeader("Connection", "close");
    }

    private static HttpChannel channel(Context ctx) {
        try {
            Request base = Request.getBaseRequest(ctx.req());
            return base == null ? null : base.getHttpChannel();
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
        for (Throwable t = e; t != null; t = t.getCause()) if (type.isInstance(t)) return true;
        return false;
    }
}
