package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One soak: starts the server as a child process and runs the phases in order — greedy references, the fault matrix,
 * the cancellation probe, the soak itself (N streams for M minutes, a SIGSTOP pause in the middle), the drain check,
 * the stall storm (after the soak: the hundreds of threads it makes the server start would otherwise stay in the soak's
 * thread and memory series; the pool was seen to shrink by about one idle thread a minute), the chaos step (SIGKILL mid-stream, restart, references again, disk check), a graceful stop, and
 * the demo-model crash rounds — then writes and prints the summary ({@link SoakSummary}). Returns the exit status:
 * 0 when every invariant held, 1 otherwise.
 */
final class SoakRun {
    private final SoakSettings s;
    private final PrintWriter out;
    private final Events events;

    SoakRun(SoakSettings settings, PrintWriter out, PrintWriter err) {
        this.s = settings;
        this.out = out;
        this.events = new Events(err);
    }

    int run() throws IOException {
        Files.createDirectories(s.out());
        Path sandbox = s.out().resolve("sandbox");
        Map<String, Path> dirs = new HashMap<>();
        for (String d : List.of("home", "cache", "tmp", "ollama-empty", "hf")) dirs.put(d, Files.createDirectories(sandbox.resolve(d)));
        Map<String, String> env = new HashMap<>();
        env.put("HOME", dirs.get("home").toString());
        env.put("XDG_CACHE_HOME", dirs.get("cache").toString());
        env.put("OLLAMA_MODELS", dirs.get("ollama-empty").toString());
        env.put("TMPDIR", dirs.get("tmp").toString());
        env.put("HF_HOME", dirs.get("hf").toString());
        List<String> serveArgs = new ArrayList<>(List.of("--model", s.model().toString(), "--parallel", Integer.toString(s.parallel())));
        if (s.threads() != null) serveArgs.addAll(List.of("--threads", Integer.toString(s.threads())));
        if (s.apiKey() != null) serveArgs.addAll(List.of("--api-key", s.apiKey()));
        if (s.maxBodyBytes() != null) serveArgs.addAll(List.of("--max-body-bytes", Long.toString(s.maxBodyBytes())));
        // The server's body timeout within the harness's deadlines, so that a stalled body is answered (408) before the
        // harness would call it a hang.
        long deadlineSeconds = Math.min(s.deadline().toSeconds(), s.matrixDeadline().toSeconds());
        serveArgs.addAll(List.of("--body-timeout", Long.toString(Math.max(1, Math.min(10, deadlineSeconds / 3)))));
        ServerLaunch launch = new ServerLaunch(ServerLaunch.currentJava(), ServerLaunch.flags(dirs.get("tmp")), ServerLaunch.program(s.serverJar()),
                serveArgs, env, s.serverJar() != null ? s.serverJar().toString() : "this JVM's class path, main class " + ServerLaunch.MAIN_CLASS);
        events.say("soak: " + s.streams() + " streams for " + SoakSummary.duration(s.soak()) + ", seed " + s.seed() + ", model " + s.model()
                + ", output " + s.out());
        events.say("server: " + String.join(" ", launch.command(s.port())).replace(System.getProperty("java.class.path"), "<class path>"));

        List<Path> watched = new ArrayList<>(dirs.values());
        watched.add(s.model());
        DiskSnapshot before = DiskSnapshot.of(watched);
        DiskSnapshot.FileState modelBefore = DiskSnapshot.state(s.model());

        References references = new References();
        ActionMix mix = new ActionMix(s.faults(), s.faultRate(), s.disconnectRate(), s.referenceRate(), s.maxTokens(), references.size(), s.apiKey() != null);
        Fault.Settings faultSettings = new Fault.Settings(s.effectiveMaxBodyBytes(), s.stall());
        SoakSummary.Builder result = new SoakSummary.Builder(s, launch);

        try (Recorder recorder = new Recorder(s.out().resolve("requests.csv"))) {
            ServerHolder holder = new ServerHolder(launch, s.port(), s.apiKey(), s.out(), s.startTimeout(), events);
            holder.start("first start");
            Driver driver = new Driver(holder, recorder, events, references, faultSettings, s.deadline());
            holder.model(modelName(driver));
            Watchdog watchdog = new Watchdog(holder, driver, events, s.versionDeadline(), s.heartbeatEvery(), s.deadline(), s.recover());
            HeapAfterGc heap = new HeapAfterGc(s.out());
            if (!heap.available()) events.add("warning", "no jcmd in " + System.getProperty("java.home") + ": heap after GC is not sampled");
            Sampler sampler = new Sampler(holder, driver, watchdog, recorder, events, heap.available() ? heap : null, s.sampleEvery(), s.heapEvery(),
                    s.out().resolve("samples.csv"));
            Streams streams = new Streams(driver, mix, s.seed(), s.streams(), s.thinkMs());
            try {
                phase("references", watchdog, sampler);
                result.referenceProblems = references.record(driver);
                result.streamedVersusWhole = references.streamedVersusWhole();
                result.referenceTexts = references.texts();

                if (s.matrix()) {
                    phase("matrix", watchdog, sampler);
                    watchdog.holdRecovery(true);
                    result.matrix = FaultMatrix.run(driver, s.faults(), s.apiKey() != null, s.matrixDeadline(), events, mix, s.quarantine(), s.seed(),
                            s.out().resolve("faults.csv"));
                    watchdog.holdRecovery(false);
                    if (!mix.quarantined().isEmpty()) {
                        events.add("quarantine", "left out of the soak's mix because they wedged the server: "
                                + String.join(", ", mix.quarantined().stream().map(f -> f.label).sorted().toList()));
                    }
                }

                phase("cancel-probe", watchdog, sampler);
                result.cancel = CancelProbe.run(driver, s.cancelTokens(), events);

                phase("soak", watchdog, sampler);
                sampler.sample(false);
                result.soakStart = events.now();
                streams.start("soak", 1);
                long soakNanos = s.soak().toNanos();
                long t0 = System.nanoTime();
                if (s.pause().toNanos() > 0 && soakNanos > s.pause().toNanos() * 3) {
                    sleepNanos(soakNanos / 2 - (System.nanoTime() - t0));
                    pause(holder);
                }
                sleepNanos(soakNanos - (System.nanoTime() - t0));
                result.soakEnd = events.now();
                events.say("soak over; waiting for the requests in flight");
                streams.stop();
                sampler.sample(false);
                result.soakEndEpoch = holder.epoch();

                phase("drain", watchdog, sampler);
                result.drained = CancelProbe.waitIdle(driver, Duration.ofSeconds(20));
                result.idleMetrics = driver.metrics(Duration.ofSeconds(5));
                sampler.sample(false);

                if (s.storm() > 0) {
                    phase("storm", watchdog, sampler);
                    watchdog.holdRecovery(true);
                    result.storm = StallStorm.run(driver, s.storm(), s.stall(), s.versionDeadline(), events);
                    watchdog.holdRecovery(false);
                    ensureHealthy(driver, holder, "after the stall storm");
                }

                phase("kill", watchdog, sampler);
                result.chaos = chaos(holder, driver, streams, sampler, watchdog, references, watched, before, modelBefore);

                phase("stop", watchdog, sampler);
                sampler.sample(false);
            } finally {
                streams.stop();
                sampler.close();
                watchdog.close();
                ServerProcess last = holder.current();
                if (last != null && last.alive()) {
                    long t = System.nanoTime();
                    result.stopStatus = last.stop(Duration.ofSeconds(15));
                    result.stopMs = (System.nanoTime() - t) / 1_000_000;
                    events.add("stop", "SIGTERM: pid " + last.pid() + " exited with status " + result.stopStatus + " after " + result.stopMs + " ms");
                }
                result.records = recorder.all();
                result.samples = sampler.samples();
                result.probes = watchdog.probes();
                result.wedges = watchdog.wedges();
                result.unplannedRestarts = holder.unplannedRestarts();
                result.processes = holder.processes();
                result.quarantined = mix.quarantined();
            }
            if (result.chaos != null) {
                result.chaos = new ChaosResult(result.chaos.inFlightAtKill(), result.chaos.runningAtKill(), result.chaos.restarted(),
                        result.chaos.restartMs(), result.chaos.restartError(), result.chaos.referenceFailures(), result.chaos.diskAfterKill(),
                        before.diff(DiskSnapshot.of(watched)), DiskSnapshot.state(s.model()).equals(modelBefore));
            }
        }

        if (s.demoCrashes() > 0) {
            events.say("demo-model crash rounds (" + s.demoCrashes() + ")");
            try {
                result.demo = DemoModelCrash.run(launch, s.out().resolve("demo-sandbox"), s.apiKey(), s.demoCrashes(), s.startTimeout(), s.deadline(), events);
            } catch (IOException e) {
                result.demoError = e.getMessage();
                events.add("demo-model", "failed: " + e.getMessage());
            }
        }
        result.events = events.all();
        SoakSummary summary = result.build();
        summary.write(s.out());
        out.print(summary.text());
        out.flush();
        return summary.failed() ? 1 : 0;
    }

    private ChaosResult chaos(ServerHolder holder, Driver driver, Streams streams, Sampler sampler, Watchdog watchdog, References references,
                              List<Path> watched, DiskSnapshot before, DiskSnapshot.FileState modelBefore) throws IOException {
        streams.start("kill", 2);
        sleepNanos(s.killLoad().toNanos());
        long until = System.nanoTime() + 10_000_000_000L;
        while (streams.inFlight() == 0 && System.nanoTime() < until) sleepNanos(5_000_000);
        PromText m = driver.metrics(Duration.ofSeconds(2));
        double running = m == null ? Double.NaN : m.get(PromText.RUNNING);
        int inFlight = streams.inFlight();
        holder.kill("chaos step, " + inFlight + " client requests in flight, " + (Double.isNaN(running) ? "?" : Math.round(running))
                + " sequences running", true);
        DiskSnapshot.Diff afterKill = before.diff(DiskSnapshot.of(watched));
        boolean restarted = false;
        long restartMs = -1;
        String error = null;
        try {
            ServerProcess p = holder.start("restart after the planned kill");
            restarted = true;
            restartMs = p.startMillis();
        } catch (IOException e) {
            error = e.getMessage();
            events.add("restart failed", e.getMessage());
        }
        List<RequestRecord> refFailures = List.of();
        streams.phase("after-restart");
        sampler.phase("after-restart");
        watchdog.phase("after-restart");
        if (restarted) {
            sleepNanos(s.afterRestart().toNanos());
            sampler.sample(false);   // the restarted server under load, whatever the sampler's cadence
            streams.stop();
            refFailures = references.check(driver, "after-restart");
        } else {
            streams.stop();
        }
        return new ChaosResult(inFlight, running, restarted, restartMs, error, refFailures, afterKill, null,
                DiskSnapshot.state(s.model()).equals(modelBefore));
    }

    private void pause(ServerHolder holder) {
        ServerProcess p = holder.current();
        if (p == null || !p.alive()) return;
        if (!p.signalPause(true)) {
            events.add("warning", "kill -STOP failed; no pause");
            return;
        }
        events.add("pause", "kill -STOP pid " + p.pid() + " for " + SoakSummary.duration(s.pause()));
        sleepNanos(s.pause().toNanos());
        p.signalPause(false);
        events.add("resume", "kill -CONT pid " + p.pid());
    }

    /** A one-token generation must answer; otherwise the server is restarted (the failure is already recorded). */
    private void ensureHealthy(Driver driver, ServerHolder holder, String when) {
        int epoch = holder.epoch();
        RequestRecord r = driver.heartbeat("check", s.deadline());
        if (r.outcome() != Outcome.OK && !r.disrupted()) {
            events.add("wedged", when + ": a one-token generation got " + r.outcome().label);
            holder.recover(epoch, "unhealthy " + when);
        }
    }

    private void phase(String name, Watchdog w, Sampler sampler) {
        events.say("phase " + name);
        w.phase(name);
        sampler.phase(name);
    }

    /** The served model's name from /api/tags (the first), or the file name. */
    private String modelName(Driver d) {
        JsonNode tags = d.getJson("/api/tags", Duration.ofSeconds(10));
        if (tags != null && tags.path("models").isArray() && !tags.path("models").isEmpty()) {
            String n = tags.path("models").get(0).path("name").asText("");
            if (!n.isEmpty()) return n;
        }
        return s.model().getFileName().toString();
    }

    private static void sleepNanos(long nanos) {
        if (nanos <= 0) return;
        try {
            Thread.sleep(Duration.ofNanos(nanos));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
