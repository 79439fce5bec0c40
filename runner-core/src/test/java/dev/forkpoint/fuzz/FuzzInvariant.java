package dev.forkpoint.fuzz;

import dev.forkpoint.InvalidInputException;

/**
 * The invariant every fuzz target checks: an input either gives a valid result or is refused with the project's own
 * typed error ({@link InvalidInputException} and its subclasses) carrying a message that says what was wrong.
 * Anything else that escapes (a NullPointerException, an IndexOutOfBoundsException, an IllegalArgumentException from
 * the JDK, an OutOfMemoryError from a giant allocation, a StackOverflowError) propagates and is the finding; a hang is
 * caught by the fuzzer's per-input timeout.
 */
public final class FuzzInvariant {
    private FuzzInvariant() {}

    /** What a target runs on one input; it may throw anything, which {@link #typedErrorOrValid} sorts. */
    @FunctionalInterface
    public interface Body {
        void run() throws Exception;
    }

    /**
     * Runs {@code body}; returns the typed error it threw (its message checked to be non-blank), or null when it
     * returned normally. Every other throwable propagates unchanged.
     */
    public static InvalidInputException typedErrorOrValid(Body body) throws Exception {
        try {
            body.run();
            return null;
        } catch (InvalidInputException e) {
            if (e.getMessage() == null || e.getMessage().isBlank()) {
                throw new AssertionError("a typed error without a message: " + e.getClass().getName(), e);
            }
            return e;
        }
    }

    /** Fails (a finding) with {@code what} when {@code condition} does not hold. */
    public static void check(boolean condition, String what) {
        if (!condition) throw new AssertionError(what);
    }
}
