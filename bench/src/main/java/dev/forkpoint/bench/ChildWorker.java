package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A benchmark engine's child JVM, spoken to one line at a time: commands on its stdin, replies on its stdout
 * prefixed with {@link WorkerProtocol#REPLY} (other stdout lines are the library's chatter and are skipped). Its
 * stderr is its log: kept as a tail for error messages, passed to a listener, and echoed when asked. A child that
 * fails or ends surfaces as an {@link InvalidInputException} carrying the log's last lines.
 */
final class ChildWorker implements AutoCloseable {
    private static final int LOG_TAIL = 40;

    private final String label;
    private final Process process;
    private final BufferedReader replies;
    private final Writer commands;
    private final ArrayDeque<String> logTail = new ArrayDeque<>();

    ChildWorker(String label, Process process, boolean echoLog, Consumer<String> logListener) {
        this.label = label;
        this.process = process;
        this.replies = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name(label + "-log").start(() -> readLog(echoLog, logListener));
    }

    void send(String line) throws IOException {
        if (line.indexOf('\n') >= 0 || line.indexOf('\r') >= 0) throw new IllegalArgumentException("a command must be one line");
        commands.write(line);
        commands.write('\n');
        commands.flush();
    }

    /** The next reply of {@code kind}, without its prefix; a clear error with the child's last log lines if it fails. */
    String await(String kind) throws IOException {
        for (String line; (line = replies.readLine()) != null; ) {
            if (!line.startsWith(WorkerProtocol.REPLY)) continue;
            String reply = line.substring(WorkerProtocol.REPLY.length());
            if (reply.startsWith(kind)) return reply.substring(kind.length());
            if (reply.startsWith("error")) throw failure(reply);
        }
        throw failure("the " + label + " process ended");
    }

    @Override
    public void close() {
        try {
            send("quit");
            if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly();
        } catch (IOException | InterruptedException e) {
            process.destroyForcibly();
        }
    }

    private InvalidInputException failure(String what) {
        try {
            process.waitFor(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        String tail;
        synchronized (logTail) {
            tail = String.join("\n", logTail);
        }
        return new InvalidInputException(label + " failed: " + what + "\n--- last " + label + " log lines ---\n" + tail);
    }

    private void readLog(boolean echo, Consumer<String> listener) {
        try (var log = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = log.readLine()) != null; ) {
                if (echo) System.err.println("[" + label + "] " + line);
                synchronized (logTail) {
                    logTail.addLast(line);
                    if (logTail.size() > LOG_TAIL) logTail.removeFirst();
                }
                listener.accept(line);
            }
        } catch (IOException e) {
            // the child is gone; await() reports it
        }
    }
}
