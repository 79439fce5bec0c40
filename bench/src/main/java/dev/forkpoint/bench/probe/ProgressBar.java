package dev.forkpoint.bench.probe;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * Progress of one concurrency level on stderr. Interactive (stderr is a terminal and CI is not "true"): a plain-text
 * bar redrawn in place with {@code \r}; otherwise nothing until the level ends. Either way the level ends with one
 * line. Thread-safe: client threads report their samples as they finish.
 */
final class ProgressBar {
    private static final int WIDTH = 30;

    private final PrintWriter err;
    private final boolean interactive;
    private String label;
    private int total;
    private int done;
    private int lastWidth;

    ProgressBar(PrintWriter err, boolean interactive) {
        this.err = err;
        this.interactive = interactive;
    }

    /** Whether a bar is drawn: stderr is a terminal (as the launcher reports, else the console) and CI is not "true". */
    static boolean interactive(java.util.Map<String, String> env) {
        if ("true".equalsIgnoreCase(env.getOrDefault("CI", ""))) return false;
        String told = System.getProperty("forkpoint.stderr.tty");
        if (told != null) return Boolean.parseBoolean(told);
        var console = System.console();
        return console != null && console.isTerminal();
    }

    synchronized void start(String label, int total) {
        this.label = label;
        this.total = total;
        this.done = 0;
        draw();
    }

    /** One sample finished. */
    synchronized void step() {
        done++;
        draw();
    }

    /** The level is over: clears the bar and prints {@code line}. */
    synchronized void finish(String line) {
        if (interactive) err.print("\r" + " ".repeat(lastWidth) + "\r");
        err.println(line);
        err.flush();
    }

    private void draw() {
        if (!interactive) return;
        int filled = total == 0 ? WIDTH : done * WIDTH / total;
        String s = String.format(Locale.ROOT, "%s [%s%s] %d/%d", label, "#".repeat(filled), ".".repeat(WIDTH - filled), done, total);
        err.print("\r" + s + " ".repeat(Math.max(0, lastWidth - s.length())));
        lastWidth = s.length();
        err.flush();
    }
}
