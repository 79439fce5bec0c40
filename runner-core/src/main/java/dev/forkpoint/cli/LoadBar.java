package dev.forkpoint.cli;

import dev.forkpoint.engine.LoadProgress;

import java.io.PrintStream;

/**
 * A one-line progress bar for model loading (or any count of tensors), redrawn in place with carriage returns. Draws nothing unless stderr is
 * a terminal; {@link #close()} erases it. Safe to call from loader worker threads.
 */
final class LoadBar implements LoadProgress, AutoCloseable {
    private static final int WIDTH = 30;

    private final PrintStream err;
    private final boolean enabled;
    private final String label;
    private int lastFilled = -1;
    private int lastDone = -1;
    private boolean drawn;

    LoadBar(PrintStream err, boolean enabled) {
        this(err, enabled, "loading model");
    }

    LoadBar(PrintStream err, boolean enabled, String label) {
        this.err = err;
        this.enabled = enabled;
        this.label = label;
    }

    @Override
    public synchronized void update(int done, int total) {
        if (!enabled || total <= 0) return;
        int d = Math.clamp(done, 0, total);
        int filled = (int) ((long) d * WIDTH / total);
        if (filled == lastFilled && d != total && d - lastDone < Math.max(1, total / 100)) return;
        lastFilled = filled;
        lastDone = d;
        err.print("\r" + label + " [" + "#".repeat(filled) + " ".repeat(WIDTH - filled) + "] " + d + "/" + total + " tensors");
        err.flush();
        drawn = true;
    }

    @Override
    public synchronized void close() {
        if (!drawn) return;
        err.print("\r" + " ".repeat(label.length() + WIDTH + 30) + "\r");
        err.flush();
        drawn = false;
    }
}
