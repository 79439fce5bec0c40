package dev.forkpoint.engine;

/** A generation stopped because its caller cancelled it (a client that disconnected). */
public final class GenerationCancelledException extends RuntimeException {
    public GenerationCancelledException() {
        super("generation cancelled by the client");
    }
}
