package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;

/** The request names a model this server does not have (404); the message lists what it has. */
public final class ModelNotFoundException extends InvalidInputException {
    public ModelNotFoundException(String message) {
        super(message);
    }
}
