package dev.forkpoint.server;

import dev.forkpoint.engine.GenerationEvent;
import io.javalin.http.Context;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A streaming response over one {@link Completion}: NDJSON (one JSON object per line) or SSE ({@code data: …} events).
 * Every send is flushed at once. When the client goes away (a write fails, or Jetty reports the connection closed
 * while waiting for the next event) the generation is cancelled and {@link ClientGoneException} is thrown, which the
 * route wrapper swallows. SSE streams send a {@code : keep-alive} comment after {@value #KEEP_ALIVE_SECONDS} s
 * without events (so idle clients and proxies see life and a dead client is noticed).
 */
public final class EventStream implements AutoCloseable {
    static final int KEEP_ALIVE_SECONDS = 10;

    private final Context ctx;
    private final Completion completion;
    private final boolean sse;
    private final OutputStream out;
    private long lastWrite = System.nanoTime();
    private long lastCheck = System.nanoTime();

    private EventStream(Context ctx, Completion completion, boolean sse, String contentType) {
        this.ctx = ctx;
        this.completion = completion;
        this.sse = sse;
        ctx.status(200);
        ctx.res().setContentType(contentType);
        ctx.res().setHeader("Cache-Control", "no-cache");
        if (sse) ctx.res().setHeader("X-Accel-Buffering", "no");
        try {
            this.out = ctx.res().getOutputStream();
        } catch (IOException e) {
            completion.cancel();
            throw new ClientGoneException(e);
        }
    }

    /** An {@code application/x-ndjson} stream. */
    public static EventStream ndjson(Context ctx, Completion completion) {
        return new EventStream(ctx, completion, false, "application/x-ndjson");
    }

    /** A {@code text/event-stream} stream. */
    public static EventStream sse(Context ctx, Completion completion) {
        return new EventStream(ctx, completion, true, "text/event-stream; charset=utf-8");
    }

    public Completion completion() { return completion; }

    /** The next generation event, waiting as long as it takes while watching the client; null after the final one. */
    public GenerationEvent next() throws InterruptedException {
        while (true) {
            if (completion.isDrained()) return null;
            GenerationEvent e = completion.next(Completion.POLL);
            // the client is looked at on a clock too: a reply held back (tool calls) writes nothing for a while
            boolean due = System.nanoTime() - lastCheck >= Completion.POLL.toNanos();
            if (e != null && !due) return e;
            lastCheck = System.nanoTime();
            if (!ClientConnection.isOpen(ctx)) gone(null);
            if (e != null) return e;
            if (sse && System.nanoTime() - lastWrite > KEEP_ALIVE_SECONDS * 1_000_000_000L) writeRaw(": keep-alive\n\n");
        }
    }

    /** NDJSON: the object as one line. SSE: a {@code data:} event. */
    public void send(Object json) {
        String text = Json.write(json);
        writeRaw(sse ? "data: " + text + "\n\n" : text + "\n");
    }

    /** SSE: an event with a name ({@code event: name}). */
    public void send(String event, Object json) {
        if (!sse) throw new IllegalStateException("named events are SSE only");
        writeRaw("event: " + event + "\ndata: " + Json.write(json) + "\n\n");
    }

    /** Text exactly as given (e.g. {@code data: [DONE]\n\n}). */
    public void sendRaw(String text) {
        writeRaw(text);
    }

    private void writeRaw(String text) {
        try {
            out.write(text.getBytes(StandardCharsets.UTF_8));
            out.flush();
            lastWrite = System.nanoTime();
        } catch (IOException | RuntimeException e) {
            gone(e);
        }
    }

    private void gone(Throwable cause) {
        completion.cancel();
        throw new ClientGoneException(cause);
    }

    /** Cancels the generation if it has not finished. */
    @Override
    public void close() {
        completion.close();
    }
}
