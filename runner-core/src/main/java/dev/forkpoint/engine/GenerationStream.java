package dev.forkpoint.engine;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The caller's side of one submitted generation: its events in order ({@link GenerationEvent.Started}, text pieces,
 * then {@link GenerationEvent.Done} or {@link GenerationEvent.Failed}), and {@link #cancel()}. A cancelled
 * generation stops within one scheduler step, releases its KV pages, and ends with a Failed event carrying
 * {@link GenerationCancelledException}. Safe for one reader thread and any number of cancelling threads.
 */
public final class GenerationStream implements AutoCloseable {
    private final LinkedBlockingQueue<GenerationEvent> events = new LinkedBlockingQueue<>();
    private final int promptTokens;
    private volatile boolean cancelled;
    private volatile boolean finished;   // the producer has put the final event
    private boolean drained;             // the reader has taken the final event

    GenerationStream(int promptTokens) {
        this.promptTokens = promptTokens;
    }

    /** Tokens in the encoded prompt (BOS included), known at submission. */
    public int promptTokens() { return promptTokens; }

    /** The next event, waiting as long as it takes; null once the final event has been taken. */
    public GenerationEvent next() throws InterruptedException {
        if (drained) return null;
        return taken(events.take());
    }

    /** The next event, or null when none arrives within {@code timeout} or the final event has been taken. */
    public GenerationEvent poll(Duration timeout) throws InterruptedException {
        if (drained) return null;
        return taken(events.poll(timeout.toNanos(), TimeUnit.NANOSECONDS));
    }

    /** Whether the final event has been taken by the reader. */
    public boolean isDrained() { return drained; }

    /**
     * Waits for the end and returns the result; text pieces are skipped (they are in {@link GenerationResult#text()}).
     * A failure is rethrown as it was raised.
     */
    public GenerationResult await() throws InterruptedException {
        for (GenerationEvent e; (e = next()) != null; ) {
            if (e instanceof GenerationEvent.Done d) return d.result();
            if (e instanceof GenerationEvent.Failed f) throw f.error();
        }
        throw new IllegalStateException("the generation's final event was already taken");
    }

    /** Asks the scheduler to stop this generation (idempotent; no effect once it has finished). */
    public void cancel() { cancelled = true; }

    public boolean isCancelled() { return cancelled; }

    /** Whether the generation has ended (its final event is queued or taken). */
    public boolean isFinished() { return finished; }

    /** Cancels the generation unless it has finished. */
    @Override
    public void close() {
        if (!finished) cancel();
    }

    void emit(GenerationEvent event) {
        if (finished) throw new IllegalStateException("event after the final one: " + event);
        if (event instanceof GenerationEvent.Done || event instanceof GenerationEvent.Failed) finished = true;
        events.add(event);
    }

    private GenerationEvent taken(GenerationEvent e) {
        if (e instanceof GenerationEvent.Done || e instanceof GenerationEvent.Failed) drained = true;
        return e;
    }
}
