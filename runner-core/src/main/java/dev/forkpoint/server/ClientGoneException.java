package dev.forkpoint.server;

/** The client closed the connection; the generation has been cancelled and nothing more is sent. */
public final class ClientGoneException extends RuntimeException {
    public ClientGoneException() {
        super("client disconnected", null, false, false);
    }

    public ClientGoneException(Throwable cause) {
        super("client disconnected", cause, false, false);
    }
}
