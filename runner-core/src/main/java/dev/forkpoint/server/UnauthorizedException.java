package dev.forkpoint.server;

/** A missing or wrong API key (401). */
public final class UnauthorizedException extends RuntimeException {
    public UnauthorizedException(String message) {
        super(message);
    }
}
