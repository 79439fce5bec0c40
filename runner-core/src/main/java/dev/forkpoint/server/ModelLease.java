package dev.forkpoint.server;

/**
 * A request's hold on a loaded model: while any lease is open the model stays loaded; closing the last one starts its
 * keep-alive countdown. {@link #loadNanos()} is the time this request spent loading it (0 when it was loaded already),
 * what Ollama reports as {@code load_duration}.
 */
public final class ModelLease implements AutoCloseable {
    private final ServedModel model;
    private final long loadNanos;
    private final Runnable release;
    private boolean closed;

    ModelLease(ServedModel model, long loadNanos, Runnable release) {
        this.model = model;
        this.loadNanos = loadNanos;
        this.release = release;
    }

    public ServedModel model() { return model; }

    public long loadNanos() { return loadNanos; }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        release.run();
    }
}
