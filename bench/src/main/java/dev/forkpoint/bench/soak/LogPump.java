package dev.forkpoint.bench.soak;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Drains a child's stdout and stderr (so that it never blocks on a full pipe) into one log file of at most
 * {@code capBytes} (a wedged server can log millions of lines a minute; past the cap lines are only counted), and
 * tallies what it said: request log lines ({@code forkpoint: METHOD path STATUS … ms}) by status, other lines by
 * their text (stack-trace frames as one entry). Keeps the last lines for error messages.
 */
final class LogPump {
    private static final Pattern REQUEST = Pattern.compile("^forkpoint: (GET|POST|HEAD|PUT|DELETE|OPTIONS) (\\S+) (\\d{3}) ");
    private static final int DISTINCT = 200;
    private static final int TAIL = 40;

    private final OutputStream file;
    private final long capBytes;
    private long written;
    private final AtomicLong lines = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final Map<String, Long> statuses = new LinkedHashMap<>();
    private final Map<String, Long> messages = new LinkedHashMap<>();
    private final ArrayDeque<String> tail = new ArrayDeque<>();
    private final List<Thread> threads;

    LogPump(Process p, Path logFile, long capBytes, Consumer<String> stdoutLines) throws IOException {
        this.file = Files.newOutputStream(logFile);
        this.capBytes = capBytes;
        this.threads = List.of(
                Thread.ofPlatform().daemon().name("server-stdout").start(() -> pump(p.getInputStream(), stdoutLines)),
                Thread.ofPlatform().daemon().name("server-stderr").start(() -> pump(p.getErrorStream(), l -> { })));
    }

    private void pump(InputStream in, Consumer<String> listener) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                listener.accept(line);
                take(line);
            }
        } catch (IOException ignored) {
            // the child is gone
        }
    }

    private synchronized void take(String line) {
        lines.incrementAndGet();
        byte[] b = (line + "\n").getBytes(StandardCharsets.UTF_8);
        if (written + b.length <= capBytes) {
            try {
                file.write(b);
                written += b.length;
            } catch (IOException e) {
                dropped.incrementAndGet();
            }
        } else {
            dropped.incrementAndGet();
        }
        Matcher m = REQUEST.matcher(line);
        if (m.find()) {
            statuses.merge(m.group(3), 1L, Long::sum);
        } else {
            String key = line.startsWith("\tat ") || line.startsWith("    at ") ? "(stack-trace frames)"
                    : line.length() > 140 ? line.substring(0, 140) + "…" : line;
            if (messages.containsKey(key) || messages.size() < DISTINCT) messages.merge(key, 1L, Long::sum);
            else messages.merge("(other lines)", 1L, Long::sum);
        }
        tail.addLast(line);
        if (tail.size() > TAIL) tail.removeFirst();
    }

    long lines() { return lines.get(); }

    long droppedLines() { return dropped.get(); }

    /** Request log lines by status ("200" → count). */
    synchronized Map<String, Long> statuses() { return Map.copyOf(statuses); }

    /** Non-request lines by text, most frequent first, at most {@code n}. */
    synchronized List<Map.Entry<String, Long>> topMessages(int n) {
        return messages.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(n)
                .map(e -> Map.entry(e.getKey(), e.getValue())).toList();
    }

    synchronized String tail(int n) {
        return String.join("\n", tail.stream().skip(Math.max(0, tail.size() - n)).toList());
    }

    /** Waits briefly for the pipes to end (after the child exited) and closes the file. */
    void close() {
        for (Thread t : threads) {
            try {
                t.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (this) {
            try {
                file.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }
}
