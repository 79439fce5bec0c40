package dev.forkpoint.bench.probe;

/**
 * The probe could not do its work because of the server or the network: unreachable URL, an HTTP error, an unknown
 * model, a reply that is not Ollama's. The message is one line naming the URL or model and what the server said;
 * the command prints it (no stack trace) and exits with status 1.
 */
public final class ProbeException extends RuntimeException {
    public ProbeException(String message) {
        super(message);
    }

    public ProbeException(String message, Throwable cause) {
        super(message, cause);
    }
}
