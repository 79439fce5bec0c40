package dev.forkpoint.cli;

import dev.forkpoint.InvalidInputException;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;

/**
 * The CLI's exit statuses and how a failure is told to the user: one line {@code forkpoint: error: <message>} on
 * stderr, and a stack trace only with {@code --debug}.
 */
final class ExitCodes {
    static final int OK = 0;
    /** A bug or an environment failure the user cannot fix by changing the command. */
    static final int INTERNAL = 1;
    /** Bad input: an option value, a model name or file, an unusable model. */
    static final int BAD_INPUT = 2;

    private ExitCodes() {}

    /** Prints {@code failure} and returns the exit status it stands for. */
    static int report(Throwable failure, PrintStream err, boolean debug) {
        Throwable e = failure instanceof UncheckedIOException u && u.getCause() != null ? u.getCause() : failure;
        int code = BAD_INPUT;
        String message = switch (e) {
            case InvalidInputException x -> x.getMessage();
            case NoSuchFileException x -> "no such file: " + x.getFile();
            case AccessDeniedException x -> "permission denied: " + x.getFile();
            case FileSystemException x -> x.getFile() + ": " + (x.getReason() != null ? x.getReason() : x.getClass().getSimpleName());
            case IOException x -> {
                code = INTERNAL;
                yield "I/O error: " + x.getMessage();
            }
            case OutOfMemoryError x -> {
                code = INTERNAL;
                yield "out of memory (" + x.getMessage() + "); give the JVM more with FORKPOINT_JAVA_OPTS=-Xmx…, or use a smaller model";
            }
            default -> {
                code = INTERNAL;
                yield "internal error: " + e;
            }
        };
        err.println("forkpoint: error: " + message);
        if (debug) e.printStackTrace(err);
        else if (code == INTERNAL) err.println("forkpoint: (run with --debug for the stack trace)");
        err.flush();
        return code;
    }
}
