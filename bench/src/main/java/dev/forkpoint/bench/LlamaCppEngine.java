package dev.forkpoint.bench;

import java.io.IOException;
import java.nio.file.Path;
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
    private final ChildWorker worker;
    private final LinkedBlockingQueue<LlamaCppTimings> timings = new LinkedBlockingQueue<>();
    private final long residentKb;

    private LlamaCppEngine(Process process, boolean echoLog) throws IOException {
        this.worker = new ChildWorker("llama.cpp", process, echoLog, line -> LlamaCppTimings.parse(line).ifPresent(timings::add));
        String loaded = worker.await("loaded");
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
        worker.send("rss");
        return Long.parseLong(worker.await("rss").trim());
    }

    @Override
    public int countTokens(String text) throws IOException {
        worker.send("tokenize " + text);
        return Integer.parseInt(worker.await("tokens").trim());
    }

    @Override
    public EngineRun run(String prompt, int maxTokens) throws IOException {
        timings.clear();
        worker.send("run " + maxTokens + " " + prompt);
        String[] done = worker.await("done").trim().split(" ");
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
        worker.close();
    }
}
