package dev.forkpoint;

/**
 * Input a user can fix: a bad option value, a prompt that does not fit, a model file that cannot be used, a model
 * name that is not there. The message says what was wrong and names it. The CLI exits with status 2 for these;
 * servers answer 400 (or 404 for a missing model).
 */
public class InvalidInputException extends RuntimeException {
    public InvalidInputException(String message) {
        super(message);
    }

    public InvalidInputException(String message, Throwable cause) {
        super(message, cause);
    }
}
