package dev.forkpoint;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * A log line that may repeat (a step that keeps failing, a client that keeps sending the same bad request) written
 * once per {@link #windowNanos window} per key, with the count of the ones held back: the first occurrence is logged
 * at once (with its stack trace, if any); later ones within the window are only counted; the first one after the
 * window is logged with "(N more like this in the last S s)". A busy loop of failures therefore costs a few lines a
 * minute, never megabytes a second. Safe for concurrent use.
 */
public final class RepeatedLog {
    private final System.Logger log;
    private final long windowNanos;
    private final LongSupplier clock;
    private final ConcurrentHashMap<String, Slot> slots = new ConcurrentHashMap<>();

    private static final class Slot {
        long lastLogged;
        long suppressed;
    }

    /** A limiter writing to {@code log} at most once per key every {@code windowSeconds}. */
    public RepeatedLog(System.Logger log, long windowSeconds) {
        this(log, TimeUnit.SECONDS.toNanos(windowSeconds), System::nanoTime);
    }

    RepeatedLog(System.Logger log, long windowNanos, LongSupplier clock) {
        if (windowNanos <= 0) throw new IllegalArgumentException("window must be positive");
        this.log = log;
        this.windowNanos = windowNanos;
        this.clock = clock;
    }

    /**
     * Logs {@code message} (and {@code error}, when non-null) unless a line with the same {@code key} was logged within
     * the window, in which case it is counted. Returns whether a line was written.
     */
    public boolean log(System.Logger.Level level, String key, String message, Throwable error) {
        if (!log.isLoggable(level)) return false;
        long now = clock.getAsLong();
        long held;
        Slot slot = slots.computeIfAbsent(key, k -> new Slot());
        synchronized (slot) {
            if (slot.lastLogged != 0 && now - slot.lastLogged < windowNanos) {
                slot.suppressed++;
                return false;
            }
            held = slot.suppressed;
            slot.suppressed = 0;
            slot.lastLogged = now == 0 ? 1 : now;
        }
        String line = held == 0 ? message
                : message + " (" + held + " more like this in the last " + TimeUnit.NANOSECONDS.toSeconds(windowNanos) + " s)";
        if (error == null) log.log(level, line);
        else log.log(level, line, error);
        return true;
    }

    /** Occurrences of {@code key} counted but not yet written. */
    public long suppressed(String key) {
        Slot slot = slots.get(key);
        if (slot == null) return 0;
        synchronized (slot) {
            return slot.suppressed;
        }
    }
}
