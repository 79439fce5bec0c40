package dev.forkpoint.bench.soak;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The run's clock and its timeline of notable events (start, restart, wedge, pause, kill …), each printed to stderr as
 * it happens.
 */
final class Events {
    record Event(double t, String kind, String detail) {}

    private final long t0 = System.nanoTime();
    private final List<Event> events = new ArrayList<>();
    private final PrintWriter err;

    Events(PrintWriter err) {
        this.err = err;
    }

    /** Seconds since the run began. */
    double now() { return (System.nanoTime() - t0) / 1e9; }

    synchronized void add(String kind, String detail) {
        Event e = new Event(now(), kind, detail);
        events.add(e);
        err.println(String.format(Locale.ROOT, "[%7.1f s] %s: %s", e.t(), kind, detail));
        err.flush();
    }

    /** A progress line without an event. */
    synchronized void say(String line) {
        err.println(String.format(Locale.ROOT, "[%7.1f s] %s", now(), line));
        err.flush();
    }

    synchronized List<Event> all() { return List.copyOf(events); }
}
