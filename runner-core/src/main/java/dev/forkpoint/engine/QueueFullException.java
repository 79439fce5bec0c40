package dev.forkpoint.engine;

/** A request refused because the scheduler's queue is full; servers answer 503 with Retry-After. */
public final class QueueFullException extends RuntimeException {
    private final int retryAfterSeconds;

    public QueueFullException(int queued, int limit, int retryAfterSeconds) {
        super("server busy: " + queued + " requests queued (limit " + limit + "); retry after " + retryAfterSeconds + " s");
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** A refusal for another reason the server is busy (e.g. every loaded model in use), with its own message. */
    public QueueFullException(String message, int retryAfterSeconds) {
        super(message);
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public int retryAfterSeconds() { return retryAfterSeconds; }
}
