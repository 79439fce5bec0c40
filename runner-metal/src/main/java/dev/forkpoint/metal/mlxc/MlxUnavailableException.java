package dev.forkpoint.metal.mlxc;

import java.util.List;

/** MLX-C cannot be used here, and why: not found (with every place looked), not loadable, or lacking functions. */
public final class MlxUnavailableException extends RuntimeException {

    public enum Reason {
        /** No MLX-C in any place looked (the report lists them). */
        NOT_FOUND,
        /** Found, but the loader would not open it. */
        NOT_LOADABLE,
        /** Opened, but it lacks functions Forkpoint binds. */
        MISSING_SYMBOLS
    }

    private final Reason reason;
    private final List<String> report;

    public MlxUnavailableException(Reason reason, List<String> report) {
        super(String.join("\n", report));
        this.reason = reason;
        this.report = List.copyOf(report);
    }

    public Reason reason() {
        return reason;
    }

    /** Lines for the log and {@code forkpoint doctor}. */
    public List<String> report() {
        return report;
    }
}
