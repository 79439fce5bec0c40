package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.GenerationCancelledException;
import dev.forkpoint.engine.QueueFullException;

/**
 * An error as the client sees it: an HTTP status, the kind (so that each API can pick its own error type name), a
 * message that says what was wrong, the request field it concerns (null when none) and, for {@link Kind#BUSY}, the
 * seconds to wait, and a machine-readable code where there is one ({@link ContextLengthException#CODE}; else null). Built by {@link #of(Throwable)}, the one place exceptions map to statuses:
 * <ul>
 *   <li>{@link UnauthorizedException} → 401; {@link ForbiddenException} → 403; {@link ModelNotFoundException} → 404;
 *   {@link RequestTimeoutException} → 408; {@link PayloadTooLargeException} → 413; {@link TooManyRequestsException} → 429
 *   <li>{@link InvalidInputException} (bad JSON, wrong types, bad options, context overflow: {@link ContextLengthException} …) → 400
 *   <li>{@link QueueFullException} → 503 with Retry-After
 *   <li>{@link GenerationCancelledException} → 499 (the client is gone; nothing is sent)
 *   <li>anything else → 500 "internal error: …" with a short message; the stack trace goes to the log only
 * </ul>
 */
public record ApiError(int status, Kind kind, String message, String param, int retryAfterSeconds, String code) {
    public enum Kind { BAD_REQUEST, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, TIMEOUT, PAYLOAD_TOO_LARGE, TOO_MANY_REQUESTS, BUSY, CANCELLED, INTERNAL }

    private static final System.Logger LOG = System.getLogger(ApiError.class.getName());
    private static final dev.forkpoint.RepeatedLog INTERNAL_ERRORS = new dev.forkpoint.RepeatedLog(LOG, 60);

    public ApiError(int status, Kind kind, String message, String param, int retryAfterSeconds) {
        this(status, kind, message, param, retryAfterSeconds, null);
    }

    public static ApiError of(Throwable e) {
        return switch (e) {
            case UnauthorizedException u -> new ApiError(401, Kind.UNAUTHORIZED, u.getMessage(), null, 0);
            case ForbiddenException f -> new ApiError(403, Kind.FORBIDDEN, f.getMessage(), null, 0);
            case ModelNotFoundException m -> new ApiError(404, Kind.NOT_FOUND, m.getMessage(), "model", 0);
            case RequestTimeoutException t -> new ApiError(408, Kind.TIMEOUT, t.getMessage(), null, 0);
            case TooManyRequestsException t -> new ApiError(429, Kind.TOO_MANY_REQUESTS, t.getMessage(), null, 1);
            case PayloadTooLargeException p -> new ApiError(413, Kind.PAYLOAD_TOO_LARGE, p.getMessage(), null, 0);
            case ContextLengthException c -> new ApiError(400, Kind.BAD_REQUEST, c.getMessage(), c.field(), 0, ContextLengthException.CODE);
            case BadFieldException b -> new ApiError(400, Kind.BAD_REQUEST, b.getMessage(), b.field(), 0);
            case InvalidInputException i -> new ApiError(400, Kind.BAD_REQUEST, i.getMessage(), null, 0);
            case QueueFullException q -> new ApiError(503, Kind.BUSY, q.getMessage(), null, q.retryAfterSeconds());
            case GenerationCancelledException c -> new ApiError(499, Kind.CANCELLED, c.getMessage(), null, 0);
            default -> {
                INTERNAL_ERRORS.log(System.Logger.Level.ERROR, e.getClass().getName(), "internal error: " + e, e);
                String detail = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
                if (detail.length() > 200) detail = detail.substring(0, 200) + "…";
                yield new ApiError(500, Kind.INTERNAL, "internal error: " + detail, null, 0);
            }
        };
    }
}
