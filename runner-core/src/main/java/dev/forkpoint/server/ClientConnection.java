package dev.forkpoint.server;

import io.javalin.http.Context;
import org.eclipse.jetty.server.Request;

/**
 * Jetty's notice of a closed client connection. It is seen as soon as Jetty learns of it; a write to a closed
 * connection (see {@link EventStream}) is the other, always reliable, signal.
 */
final class ClientConnection {
    private ClientConnection() {}

    static boolean isOpen(Context ctx) {
        try {
            Request base = Request.getBaseRequest(ctx.req());
            return base == null || base.getHttpChannel().getEndPoint().isOpen();
        } catch (RuntimeException e) {
            return true;
        }
    }
}
