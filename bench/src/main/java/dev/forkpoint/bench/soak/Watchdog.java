package dev.forkpoint.bench.soak;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Watches the server throughout the run: every second {@code GET /api/version} (its latency is the responsiveness
 * series; no answer within {@code versionDeadline} is a failure), every {@code heartbeatEvery} a one-token greedy
 * generation (no answer within {@code heartbeatDeadline} means the scheduler is wedged), and whether the process is
 * still alive. A wedge or a death outside a planned kill is an event; when recovery is on, the server is killed and
 * started again so that the soak can go on (each such restart fails the run).
 */
final class Watchdog implements AutoCloseable {
    /** One version probe: when (run seconds), how long, whether it answered 200 in time. */
    record Probe(double t, double ms, boolean ok, String phase) {}

    private final ServerHolder holder;
    private final Driver driver;
    private final Events events;
    private final Duration versionDeadline, heartbeatEvery, heartbeatDeadline;
    private final boolean recover;
    private final List<Probe> probes = new ArrayList<>();
    private final List<String> wedges = new ArrayList<>();
    private final Thread thread, versionThread;
    private volatile boolean running = true;
    private volatile boolean recoveryHeld;
    private volatile String phase = "start";
    private double intervalMax;
    private int intervalFails;

    Watchdog(ServerHolder holder, Driver driver, Events events, Duration versionDeadline, Duration heartbeatEvery, Duration heartbeatDeadline,
             boolean recover) {
        this.holder = holder;
        this.driver = driver;
        this.events = events;
        this.versionDeadline = versionDeadline;
        this.heartbeatEvery = heartbeatEvery;
        this.heartbeatDeadline = heartbeatDeadline;
        this.recover = recover;
        this.thread = Thread.ofPlatform().daemon().name("soak-watchdog").start(this::loop);
        this.versionThread = Thread.ofPlatform().daemon().name("soak-version-probe").start(this::versionLoop);
    }

    /** GET /api/version once a second, in its own thread so that a slow heartbeat does not thin the series. */
    private void versionLoop() {
        while (running) {
            long tick = System.nanoTime();
            ServerProcess p = holder.current();
            if (p != null && p.alive() && !holder.expectDown()) versionProbe();
            long sleep = 1_000_000_000L - (System.nanoTime() - tick);
            if (sleep > 0) {
                try {
                    Thread.sleep(Duration.ofNanos(sleep));
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    void phase(String p) { phase = p; }

    /** While held, wedges and deaths are recorded but not recovered from (the caller manages the server). */
    void holdRecovery(boolean held) { recoveryHeld = held; }

    private void loop() {
        long nextHeartbeat = System.nanoTime() + heartbeatEvery.toNanos();
        while (running) {
            long tick = System.nanoTime();
            ServerProcess p = holder.current();
            int epoch = holder.epoch();
            if (p != null && !p.alive() && !holder.expectDown()) {
                holder.noteDeath(p);
                if (recover && !recoveryHeld) holder.recover(holder.epoch(), "the server died");
            } else if (p != null && !holder.expectDown()) {
                if (System.nanoTime() >= nextHeartbeat) {
                    nextHeartbeat = System.nanoTime() + heartbeatEvery.toNanos();
                    RequestRecord r = driver.heartbeat(phase, heartbeatDeadline);
                    if (!r.disrupted() && (r.outcome() == Outcome.HANG || r.outcome() == Outcome.RESET || r.outcome() == Outcome.SERVER_ERROR)) {
                        String why = "a one-token generation got " + r.outcome().label + " (" + r.detail() + ") in phase " + phase;
                        synchronized (this) {
                            wedges.add(String.format(java.util.Locale.ROOT, "%.1f s: %s", r.t(), why));
                        }
                        events.add("wedged", why);
                        if (recover && !recoveryHeld) holder.recover(epoch, "wedged: " + why);
                    }
                }
            }
            long sleep = 1_000_000_000L - (System.nanoTime() - tick);
            if (sleep > 0) {
                try {
                    Thread.sleep(Duration.ofNanos(sleep));
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    private void versionProbe() {
        Traffic t = holder.traffic();
        double at = events.now();
        int epoch = holder.epoch();
        RawResponse r = t.http().exchange(t.get("/api/version"), ReadPlan.WHOLE, versionDeadline);
        boolean ok = r.ending() == RawResponse.Ending.COMPLETE && r.status() == 200;
        if (!ok && (holder.epoch() != epoch || holder.expectDown())) return;   // the server was killed meanwhile: not its fault
        double ms = r.totalNanos() / 1e6;
        synchronized (this) {
            probes.add(new Probe(at, ms, ok, phase));
            intervalMax = Math.max(intervalMax, ms);
            if (!ok) intervalFails++;
        }
        if (!ok) events.add("unresponsive", "GET /api/version: " + (r.status() > 0 ? "HTTP " + r.status() : r.detail()) + " after " + Math.round(ms) + " ms");
    }

    /** The slowest probe and the failed probes since the last call (for the sample rows). */
    synchronized double[] takeInterval() {
        double[] out = {intervalMax, intervalFails};
        intervalMax = 0;
        intervalFails = 0;
        return out;
    }

    synchronized List<Probe> probes() { return List.copyOf(probes); }

    synchronized List<String> wedges() { return List.copyOf(wedges); }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
        versionThread.interrupt();
        try {
            versionThread.join(versionDeadline.toMillis() + 5_000);
            thread.join(Math.max(10_000, heartbeatDeadline.toMillis() + 5_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
