package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;

/** A request field with a bad value (400); {@link #field()} is its JSON path, e.g. {@code messages[1].content}. */
public sealed class BadFieldException extends InvalidInputException permits ContextLengthException {
    private final String field;

    public BadFieldException(String field, String message) {
        super(message);
        this.field = field;
    }

    public String field() { return field; }
}
