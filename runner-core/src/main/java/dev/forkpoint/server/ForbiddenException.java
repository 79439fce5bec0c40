package dev.forkpoint.server;

/** A request from a Host or Origin the server does not serve (403): the guard against DNS rebinding and cross-site POSTs. */
public final class ForbiddenException extends RuntimeException {
    public ForbiddenException(String message) {
        super(message);
    }
}
