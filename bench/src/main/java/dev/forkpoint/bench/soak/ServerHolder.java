package dev.forkpoint.bench.soak;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The server the soak is driving, across kills and restarts. Every kill (planned or not) and every death moves the
 * epoch on, so that a request can tell whether the server it was talking to went away while it was in flight. A
 * restart reuses the port (falling back to a new one when it cannot be bound). Log files are {@code server-N.log}.
 */
final class ServerHolder {
    private final ServerLaunch launch;
    private final Path outDir;
    private final Duration startTimeout;
    private final Events events;
    private final List<ServerProcess> all = new ArrayList<>();
    private volatile ServerProcess current;
    private volatile Traffic traffic;
    private volatile int epoch;
    private volatile boolean expectDown;
    private int port;
    private String model;
    private final String apiKey;
    private int unplannedRestarts;
    private int attempts;

    ServerHolder(ServerLaunch launch, int port, String apiKey, Path outDir, Duration startTimeout, Events events) {
        this.launch = launch;
        this.port = port;
        this.apiKey = apiKey;
        this.outDir = outDir;
        this.startTimeout = startTimeout;
        this.events = events;
    }

    /** Starts a server (the first, or after a kill); throws when it does not come up. */
    synchronized ServerProcess start(String why) throws IOException {
        Path log = outDir.resolve("server-" + (++attempts) + ".log");
        ServerProcess p;
        try {
            p = ServerProcess.start(launch, port, log, startTimeout);
        } catch (IOException e) {
            if (port == 0 || !String.valueOf(e.getMessage()).contains("cannot listen")) throw e;
            events.add("port", "port " + port + " could not be bound again; using a new one (" + e.getMessage().lines().findFirst().orElse("") + ")");
            log = outDir.resolve("server-" + (++attempts) + ".log");
            p = ServerProcess.start(launch, 0, log, startTimeout);
        }
        all.add(p);
        port = p.port();
        current = p;
        traffic = new Traffic(new RawHttp("127.0.0.1", p.port()), model, apiKey);
        expectDown = false;
        events.add("start", why + ": pid " + p.pid() + " listening on port " + p.port() + " after " + p.startMillis() + " ms (log " + log.getFileName() + ")");
        return p;
    }

    /** The name requests use for the model (learnt from /api/tags after the first start). */
    synchronized void model(String name) {
        this.model = name;
        traffic = new Traffic(traffic.http(), name, apiKey);
    }

    ServerProcess current() { return current; }

    Traffic traffic() { return traffic; }

    int epoch() { return epoch; }

    /** True from a kill or a death until the next server listens: failures meanwhile are not the server's. */
    boolean expectDown() { return expectDown; }

    String apiKey() { return apiKey; }

    /** SIGKILL; {@code planned}: the harness means it (the chaos step), so the gap until the restart is expected. */
    synchronized void kill(String why, boolean planned) {
        epoch++;
        expectDown = true;
        ServerProcess p = current;
        p.kill9();
        events.add(planned ? "kill -9" : "kill -9 (recovery)", why + ": pid " + p.pid());
    }

    /** The server died by itself: the epoch moves on (once per process). */
    synchronized void noteDeath(ServerProcess p) {
        if (p != current || expectDown || p.alive()) return;
        epoch++;
        expectDown = true;
        events.add("died", "pid " + p.pid() + " exited with status " + p.exitStatus() + " outside a planned kill");
    }

    /**
     * Recovery after a wedge or a death seen at {@code seenEpoch}: kill (if alive) and start again, unless somebody
     * else already restarted it since. Returns false when the new server did not start.
     */
    synchronized boolean recover(int seenEpoch, String why) {
        if (epoch != seenEpoch && current.alive()) return true;   // already recovered
        if (current.alive()) kill(why, false);
        unplannedRestarts++;
        for (int attempt = 1; attempt <= 3; attempt++) {
            try {
                start("restart after: " + why);
                return true;
            } catch (IOException e) {
                events.add("restart failed", "attempt " + attempt + ": " + e.getMessage());
            }
        }
        return false;
    }

    synchronized int unplannedRestarts() { return unplannedRestarts; }

    synchronized List<ServerProcess> processes() { return List.copyOf(all); }
}
