package dev.forkpoint.server;

/** One client has more request bodies in flight than the server allows per client (429, with Retry-After). */
public final class TooManyRequestsException extends RuntimeException {
    public TooManyRequestsException(String message) {
        super(message);
    }
}
