package dev.forkpoint.server;

/** A request body over the server's limit (413). */
public final class PayloadTooLargeException extends RuntimeException {
    public PayloadTooLargeException(long limit) {
        super("request body is larger than the limit of " + limit + " bytes");
    }
}
