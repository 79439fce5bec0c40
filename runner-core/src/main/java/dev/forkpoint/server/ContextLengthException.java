package dev.forkpoint.server;

import dev.forkpoint.engine.ContextOverflowException;

/**
 * A request whose prompt (plus the tokens it asks for) does not fit its context, as every API reports it: the engine's
 * one check ({@link ContextOverflowException}) in the API's field names, a 400 naming the prompt's field when the
 * prompt alone does not fit, else the field that asked for the tokens. {@link ApiError#code()} is {@value #CODE}
 * (OpenAI's code for it).
 */
public final class ContextLengthException extends BadFieldException {
    /** The error code of a context overflow. */
    public static final String CODE = "context_length_exceeded";

    ContextLengthException(ContextOverflowException e, String promptField, String predictField) {
        super(e.promptAlone() ? promptField : predictField, e.message(predictField));
    }
}
