package dev.forkpoint.server;

/** A request body that stalled or arrived too slowly (408); the connection is closed after the answer. */
public final class RequestTimeoutException extends RuntimeException {
    public RequestTimeoutException(String message) {
        super(message);
    }
}
