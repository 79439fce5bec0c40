package dev.forkpoint.cli;

import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Routes the engine's System.Logger events (one line per event, such as the per-request cache line) to stderr as
 * {@code forkpoint: <message>}: warnings always, informational lines only with {@code --debug}.
 */
final class CliLogging {
    private CliLogging() {}

    static void configure(boolean verbose) {
        LogManager.getLogManager().reset();
        Logger root = Logger.getLogger("");
        ConsoleHandler handler = new ConsoleHandler();
        handler.setFormatter(new Formatter() {
            @Override
            public String format(LogRecord r) {
                String line = "forkpoint: " + dev.forkpoint.LogText.oneLine(formatMessage(r)) + System.lineSeparator();
                if (r.getThrown() == null || !verbose) return line;
                java.io.StringWriter trace = new java.io.StringWriter();
                r.getThrown().printStackTrace(new java.io.PrintWriter(trace));
                return line + trace;
            }
        });
        Level level = verbose ? Level.INFO : Level.WARNING;
        handler.setLevel(level);
        root.setLevel(level);
        root.addHandler(handler);
    }

    /** Lets INFO lines of {@code loggerName} (and below) through even without --debug (the server's request log). */
    static void enableInfo(String loggerName) {
        Logger root = Logger.getLogger("");
        for (var h : root.getHandlers()) if (h.getLevel().intValue() > Level.INFO.intValue()) h.setLevel(Level.INFO);
        Logger.getLogger(loggerName).setLevel(Level.INFO);
    }
}
