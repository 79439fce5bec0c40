package dev.forkpoint.engine;

/** A request refused because the scheduler's queue is full; servers answer 503 with Retry-After. */
public final class QueueFullException extends RuntimeException {
    private final int retryAfterSeconds;

    public QueueFullException(int queued, int limit, int retryAfterSeconds) {
        super("server busy: " + queued + " requests queued (limit " + limit + "); retry after " + retryAfterSeconds + " s");
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public int retryAfterSeconds() { return retryAfterSeconds; }
}
