package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * llama.cpp through de.kherud:llama, run in a child JVM ({@link LlamaCppWorker}). Prompt and generation times are
 * llama.cpp's own, parsed from the timing report it logs after each completion; the wall-clock times the child
 * observes on its token stream are the fallback when no report arrives.
 */
final class LlamaCppEngine implements BenchEngine {
    private static final int LOG_TAIL = 40;

    private final Process process;
    private final BufferedReader replies;
    private final Writer commands;
    private final LinkedBlockingQueue<LlamaCppTimings> timings = new LinkedBlockingQueue<>();
    private final ArrayDeque<String> logTail = new ArrayDeque<>();
    private final long residentKb;

    private LlamaCppEngine(Process process, boolean echoLog) throws IOException {
        this.process = process;
        this.replies = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("llama.cpp-log").start(() -> readLog(echoLog));
        String loaded = await("loaded");
        this.residentKb = Long.parseLong(loaded.trim());
    }

    /** Starts the child and waits until it has loaded {@code model}. */
    static LlamaCppEngine start(Path model, int threads, int ctx, int batch, boolean echoLog) throws IOException {
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), LlamaCppWorker.class.getName(),
                model.toAbsolutePath().toString(), Integer.toString(threads), Integer.toString(ctx), Integer.toString(batch)));
        return new LlamaCppEngine(new ProcessBuilder(cmd).start(), echoLog);
    }

    @Override
    public String name() { return "llama.cpp"; }

    @Override
    public long residentKbAfterLoad() { return residentKb; }

    @Override
    public long residentKbNow() throws IOException {
        send("rss");
        return Long.parseLong(await("rss").trim());
    }

    @Override
    public int countTokens(String text) throws IOException {
        send("tokenize " + oneLine(text));
        return Integer.parseInt(await("tokens").trim());
    }

    @Override
    public EngineRun run(String prompt, int maxTokens) throws IOException {
        timings.clear();
        send("run " + maxTokens + " " + oneLine(prompt));
        String[] done = await("done").trim().split(" ");
        int outputs = Integer.parseInt(done[0]);
        long first = Long.parseLong(done[1]), last = Long.parseLong(done[2]), wall = Long.parseLong(done[3]);
        LlamaCppTimings promptTiming = null, evalTiming = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        try {
            while ((promptTiming == null || evalTiming == null) && System.nanoTime() < deadline) {
                LlamaCppTimings t = timings.poll(100, TimeUnit.MILLISECONDS);
                if (t == null) continue;
                if (t.prompt()) promptTiming = t;
                else evalTiming = t;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (promptTiming != null && evalTiming != null) {
            return new EngineRun(promptTiming.tokens(), promptTiming.nanos(), evalTiming.tokens(), evalTiming.nanos(), wall, "engine");
        }
        // No timing report: time to the first streamed token, then the stream's rate.
        return new EngineRun(-1, first, Math.max(0, outputs - 1), last - first, wall, "wall");
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

    private static String oneLine(String text) {
        if (text.indexOf('\n') >= 0 || text.indexOf('\r') >= 0) throw new IllegalArgumentException("prompt must be one line");
        return text;
    }

    private void send(String line) throws IOException {
        commands.write(line);
        commands.write('\n');
        commands.flush();
    }

    /** The next reply of {@code kind}, without its prefix; a clear error with llama.cpp's last log lines if the child fails. */
    private String await(String kind) throws IOException {
        for (String line; (line = replies.readLine()) != null; ) {
            if (!line.startsWith(LlamaCppWorker.REPLY)) continue;
            String reply = line.substring(LlamaCppWorker.REPLY.length());
            if (reply.startsWith(kind)) return reply.substring(kind.length());
            if (reply.startsWith("error")) throw failure(reply);
        }
        throw failure("the llama.cpp process ended");
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
        return new InvalidInputException("llama.cpp failed: " + what + "\n--- last llama.cpp log lines ---\n" + tail);
    }

    private void readLog(boolean echo) {
        try (var log = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = log.readLine()) != null; ) {
                if (echo) System.err.println("[llama.cpp] " + line);
                synchronized (logTail) {
                    logTail.addLast(line);
                    if (logTail.size() > LOG_TAIL) logTail.removeFirst();
                }
                LlamaCppTimings.parse(line).ifPresent(timings::add);
            }
        } catch (IOException e) {
            // the child is gone; await() reports it
        }
    }
}
