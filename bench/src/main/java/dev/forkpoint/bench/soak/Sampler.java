package dev.forkpoint.bench.soak;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Samples the server every {@code every}: its resident memory, threads and open files ({@link ProcStatus}), the heap
 * after a full GC every {@code heapEvery} ({@link HeapAfterGc}), the KV pages, queue depth and running sequences of
 * {@code GET /metrics}, the slowest {@code /api/version} since the last sample, and the client's running counts.
 * Each sample is a row of {@code samples.csv}, written (and flushed) as it is taken.
 */
final class Sampler implements AutoCloseable {
    record Sample(double t, String phase, int epoch, long pid, long rssKib, int threads, int fds, long heapKib, long heapCommittedKib, double kvUsed, double kvFree,
                  double queue, double running, double cancelled, double server5xx, double versionMaxMs, int versionFails, long requests,
                  long ok, long clientErrors, long serverErrors, long hangs, long resets) {}

    static final String CSV_HEADER = "t_s,phase,epoch,pid,rss_kib,threads,fds,heap_after_gc_kib,heap_committed_kib,kv_pages_used,kv_pages_free,queue_depth,"
            + "running_sequences,cancelled_total,server_5xx_total,version_max_ms,version_fails,requests,ok,client_errors,server_errors,hangs,resets";

    private final ServerHolder holder;
    private final Driver driver;
    private final Watchdog watchdog;
    private final Recorder recorder;
    private final Events events;
    private final HeapAfterGc heap;
    private final Duration every, heapEvery;
    private final BufferedWriter csv;
    private final List<Sample> samples = new ArrayList<>();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile String phase = "start";

    Sampler(ServerHolder holder, Driver driver, Watchdog watchdog, Recorder recorder, Events events, HeapAfterGc heap, Duration every,
            Duration heapEvery, Path file) throws IOException {
        this.holder = holder;
        this.driver = driver;
        this.watchdog = watchdog;
        this.recorder = recorder;
        this.events = events;
        this.heap = heap;
        this.every = every;
        this.heapEvery = heapEvery;
        this.csv = Files.newBufferedWriter(file);
        csv.write(CSV_HEADER);
        csv.newLine();
        csv.flush();
        this.thread = Thread.ofPlatform().daemon().name("soak-sampler").start(this::loop);
    }

    void phase(String p) { phase = p; }

    private void loop() {
        long nextHeap = System.nanoTime();
        while (running) {
            long tick = System.nanoTime();
            boolean withHeap = heap != null && heapEvery.toNanos() > 0 && tick >= nextHeap;
            if (withHeap) nextHeap = tick + heapEvery.toNanos();
            sample(withHeap);
            long sleep = every.toNanos() - (System.nanoTime() - tick);
            if (sleep > 0) {
                try {
                    Thread.sleep(Duration.ofNanos(sleep));
                } catch (InterruptedException e) {
                    if (!running) return;
                }
            }
        }
    }

    /** Takes one sample now (also called by the run at phase ends); the heap only when {@code withHeap}. */
    synchronized Sample sample(boolean withHeap) {
        ServerProcess p = holder.current();
        int epoch = holder.epoch();
        if (p == null || !p.alive() || holder.expectDown()) return null;
        ProcStatus ps = ProcStatus.of(p.pid());
        HeapAfterGc.Heap h = withHeap ? heap.measure(p.pid()) : HeapAfterGc.Heap.UNKNOWN;
        PromText m = driver.metrics(Duration.ofSeconds(5));
        if (holder.epoch() != epoch || holder.expectDown() || !p.alive()) return null;   // killed while being sampled
        double[] v = watchdog.takeInterval();
        Sample s = new Sample(events.now(), phase, epoch, p.pid(), ps == null ? -1 : ps.rssKib(), ps == null ? -1 : ps.threads(),
                ps == null ? -1 : ps.fds(), h.usedKib(), h.committedKib(), m == null ? Double.NaN : m.get(PromText.KV_USED), m == null ? Double.NaN : m.get(PromText.KV_FREE),
                m == null ? Double.NaN : m.get(PromText.QUEUE), m == null ? Double.NaN : m.get(PromText.RUNNING),
                m == null ? Double.NaN : m.get(PromText.CANCELLED), m == null ? Double.NaN : m.server5xx(), v[0], (int) v[1], recorder.total(),
                recorder.count(Outcome.OK), recorder.count(Outcome.CLIENT_ERROR), recorder.count(Outcome.SERVER_ERROR), recorder.count(Outcome.HANG),
                recorder.count(Outcome.RESET));
        samples.add(s);
        try {
            csv.write(String.format(Locale.ROOT, "%.1f,%s,%d,%d,%d,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%.1f,%d,%d,%d,%d,%d,%d,%d", s.t(), s.phase(), s.epoch(),
                    s.pid(), s.rssKib(), s.threads(), s.fds(), s.heapKib() < 0 ? "" : Long.toString(s.heapKib()),
                    s.heapCommittedKib() < 0 ? "" : Long.toString(s.heapCommittedKib()), num(s.kvUsed()), num(s.kvFree()),
                    num(s.queue()), num(s.running()), num(s.cancelled()), num(s.server5xx()), s.versionMaxMs(), s.versionFails(), s.requests(),
                    s.ok(), s.clientErrors(), s.serverErrors(), s.hangs(), s.resets()));
            csv.newLine();
            csv.flush();
        } catch (IOException e) {
            events.add("warning", "cannot write samples.csv: " + e.getMessage());
        }
        return s;
    }

    private static String num(double d) { return Double.isNaN(d) ? "" : Long.toString(Math.round(d)); }

    synchronized List<Sample> samples() { return List.copyOf(samples); }

    @Override
    public void close() throws IOException {
        running = false;
        thread.interrupt();
        try {
            thread.join(30_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            csv.close();
        }
    }
}
