package dev.forkpoint.server;

import dev.forkpoint.engine.GenerationCancelledException;
import dev.forkpoint.engine.GenerationEvent;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.GenerationStream;
import io.javalin.http.Context;

import java.time.Duration;

/**
 * One submitted generation as a server handler sees it: its events (recorded into the metrics as they are taken: time
 * to first token, inter-token latency, tokens evaluated/reused/generated, cancellations) and its cancellation.
 * Closing it cancels a generation that has not finished. One reader thread.
 */
public final class Completion implements AutoCloseable {
    static final Duration POLL = Duration.ofMillis(200);

    private final ServedModel model;
    private final GenerationStream stream;
    private final ServerMetrics metrics;
    private final long submitNanos;
    private long lastTextNanos;
    private int cachedTokens;
    private volatile boolean countedCancel;

    Completion(ServedModel model, GenerationStream stream, ServerMetrics metrics, long submitNanos) {
        this.model = model;
        this.stream = stream;
        this.metrics = metrics;
        this.submitNanos = submitNanos;
    }

    public ServedModel model() { return model; }

    /** Tokens of the encoded prompt (BOS included), known at submission. */
    public int promptTokens() { return stream.promptTokens(); }

    /** Prompt tokens reused from the prefix cache, known once {@link GenerationEvent.Started} has been taken. */
    public int cachedTokens() { return cachedTokens; }

    /** When the request was submitted ({@link System#nanoTime()}). */
    public long submitNanos() { return submitNanos; }

    /** The next event within {@code timeout}, or null (timeout, or after the final event). */
    public GenerationEvent next(Duration timeout) throws InterruptedException {
        GenerationEvent e = stream.poll(timeout);
        if (e != null) observe(e);
        return e;
    }

    /**
     * Waits for the result of a non-streaming request, cancelling the generation when the client of {@code ctx}
     * goes away meanwhile. A failure is rethrown as raised.
     */
    public GenerationResult await(Context ctx) throws InterruptedException {
        long nextCheck = System.nanoTime() + POLL.toNanos();
        while (true) {
            GenerationEvent e = next(POLL);
            if (e instanceof GenerationEvent.Done d) return d.result();
            if (e instanceof GenerationEvent.Failed f) throw f.error();
            if (e == null && stream.isDrained()) throw new IllegalStateException("the generation's final event was already taken");
            // Events may come faster than the poll interval: look at the client on a clock, not only when idle.
            if (e == null || System.nanoTime() - nextCheck >= 0) {
                nextCheck = System.nanoTime() + POLL.toNanos();
                if (!ClientConnection.isOpen(ctx)) {
                    cancel();
                    throw new ClientGoneException();
                }
            }
        }
    }

    /**
     * Cancels the generation (counted once in the metrics when it had not finished, after the cancellation is
     * requested: once counted, the scheduler ends it at its next step).
     */
    public void cancel() {
        boolean unfinished = !stream.isFinished();
        stream.cancel();
        if (unfinished) countCancel();
    }

    private synchronized void countCancel() {
        if (countedCancel) return;
        countedCancel = true;
        metrics.cancelled(model.name());
    }

    public boolean isFinished() { return stream.isFinished(); }

    /** Whether the final event has been taken. */
    public boolean isDrained() { return stream.isDrained(); }

    @Override
    public void close() {
        if (!stream.isFinished()) cancel();
    }

    private void observe(GenerationEvent e) {
        long now = System.nanoTime();
        String m = model.name();
        switch (e) {
            case GenerationEvent.Started s -> cachedTokens = s.cachedTokens();
            case GenerationEvent.Text t when t.piece().isEmpty() -> { }   // log-probabilities released at the end
            case GenerationEvent.Text t -> {
                if (lastTextNanos == 0) metrics.timeToFirstToken(m, now - submitNanos);
                else metrics.interTokenLatency(m, now - lastTextNanos);
                lastTextNanos = now;
            }
            case GenerationEvent.Done d -> metrics.completed(m, d.result());
            case GenerationEvent.Failed f -> {
                if (f.error() instanceof GenerationCancelledException) countCancel();
            }
        }
    }
}
