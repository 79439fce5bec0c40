package dev.forkpoint.server;

import io.javalin.http.Context;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.io.SocketChannelEndPoint;
import org.eclipse.jetty.server.Request;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Whether the client of a request is still there, while its response is being computed. Jetty reads nothing from a
 * connection while a request is handled, so a client that closes its socket during a long generation is not noticed
 * by Jetty until a write fails. Once the request's body has been read to its end, this looks at the socket itself: a
 * non-blocking read of one byte that returns end-of-stream means the client has gone (what Go's net/http, and so
 * Ollama, notice the same way). A byte that does arrive is a pipelined next request; it cannot be handed back to Jetty,
 * so the response is marked {@code Connection: close} and the client resends it (RFC 9112 §9.3.2), and the socket is not
 * read again for this request.
 */
final class ClientConnection {
    private static final String PIPELINED = "forkpoint.pipelined";

    private ClientConnection() {}

    static boolean isOpen(Context ctx) {
        try {
            Request base = Request.getBaseRequest(ctx.req());
            if (base == null) return true;
            EndPoint endPoint = base.getHttpChannel().getEndPoint();
            if (!endPoint.isOpen() || endPoint.isInputShutdown()) return false;
            if (ctx.attribute(PIPELINED) != null || !RequestBody.consumed(ctx) || endPoint.isFillInterested()) return true;
            if (!(endPoint instanceof SocketChannelEndPoint socket) || socket.getChannel().isBlocking()) return true;
            int n = socket.getChannel().read(ByteBuffer.allocate(1));
            if (n < 0) return false;
            if (n > 0) {
                ctx.attribute(PIPELINED, Boolean.TRUE);
                RequestBody.closeAfterwards(ctx);
            }
            return true;
        } catch (IOException e) {
            return false;   // the socket failed: the client is gone
        } catch (RuntimeException e) {
            return true;
        }
    }
}
