package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Does the server stop generating when the client goes away? On an idle server, a long greedy generation
 * ({@code /api/generate}, whole and then streamed) is sent; as soon as {@code GET /metrics} shows it running the
 * client closes the connection; then the probe waits for {@code forkpoint_running_sequences} to fall back to 0 and
 * reads {@code forkpoint_generations_cancelled_total}: up by one means the server noticed and cancelled. When the
 * generation ended before it was seen running, the probe is inconclusive (use a larger model or more tokens).
 */
final class CancelProbe {
    record Result(boolean stream, String verdict, double dropToIdleMs, double cancelledDelta, double generatedDelta, String detail) {
        boolean passed() { return verdict.equals("cancelled"); }
    }

    private CancelProbe() {}

    static List<Result> run(Driver d, int tokens, Events events) {
        return List.of(once(d, false, tokens, events), once(d, true, tokens, events));
    }

    private static Result once(Driver d, boolean stream, int tokens, Events events) {
        Duration poll = Duration.ofSeconds(5);
        if (!waitIdle(d, Duration.ofSeconds(20))) return new Result(stream, "inconclusive", -1, 0, 0, "the server never became idle");
        PromText m0 = d.metrics(poll);
        if (m0 == null) return new Result(stream, "inconclusive", -1, 0, 0, "no /metrics");
        Traffic t = d.holder().traffic();
        ObjectNode body = Api.OLLAMA_GENERATE.body(t.model(), "Once upon a time, there was a little dog named", tokens, stream, 0.0, 7);
        CountDownLatch drop = new CountDownLatch(1);
        AtomicReference<RequestRecord> rec = new AtomicReference<>();
        Thread client = Thread.ofVirtual().start(() -> rec.set(d.send(-1, "cancel-probe", RequestRecord.Kind.CANCEL_PROBE, Api.OLLAMA_GENERATE,
                stream, null, stream ? "streamed" : "whole", t.post(Api.OLLAMA_GENERATE, body), new ReadPlan.DropOnSignal(drop), d.deadline(), null)));
        long seenRunning = -1;
        long until = System.nanoTime() + d.deadline().toNanos();
        while (System.nanoTime() < until && client.isAlive()) {
            PromText m = d.metrics(poll);
            if (m != null && m.get(PromText.RUNNING) >= 1) {
                seenRunning = System.nanoTime();
                drop.countDown();
                break;
            }
            sleep(5);
        }
        join(client);
        if (seenRunning < 0) {
            RequestRecord r = rec.get();
            return new Result(stream, "inconclusive", -1, 0, 0, "the generation was never seen running before it ended ("
                    + (r == null ? "?" : r.outcome().label + " after " + Math.round(r.ms()) + " ms") + "); try more tokens or a larger model");
        }
        long idleAt = -1;
        long idleUntil = System.nanoTime() + d.deadline().toNanos();
        while (System.nanoTime() < idleUntil) {
            PromText m = d.metrics(poll);
            if (m != null && m.get(PromText.RUNNING) == 0) {
                idleAt = System.nanoTime();
                break;
            }
            sleep(10);
        }
        PromText m1 = d.metrics(poll);
        double cancelled = m1 == null ? Double.NaN : zeroIfNaN(m1.get(PromText.CANCELLED)) - zeroIfNaN(m0.get(PromText.CANCELLED));
        double generated = m1 == null ? 0 : zeroIfNaN(m1.get(PromText.GENERATED)) - zeroIfNaN(m0.get(PromText.GENERATED));
        double ms = idleAt < 0 ? -1 : (idleAt - seenRunning) / 1e6;
        String verdict = Double.isNaN(cancelled) || cancelled < 1 ? "not-cancelled" : "cancelled";
        String detail = String.format(Locale.ROOT, "%s request dropped while running; %s; cancelled_total +%s; generated_tokens_total +%s",
                stream ? "streamed" : "whole", ms < 0 ? "still running " + d.deadline().toSeconds() + " s after the client left"
                        : "running_sequences back to 0 " + Math.round(ms) + " ms after the client left", fmt(cancelled), fmt(generated));
        events.say("cancel probe (" + (stream ? "streamed" : "whole") + "): " + verdict + " — " + detail);
        return new Result(stream, verdict, ms, cancelled, generated, detail);
    }

    static boolean waitIdle(Driver d, Duration within) {
        long until = System.nanoTime() + within.toNanos();
        while (System.nanoTime() < until) {
            PromText m = d.metrics(Duration.ofSeconds(5));
            if (m != null && !(m.get(PromText.RUNNING) > 0) && !(m.get(PromText.QUEUE) > 0)) return true;
            sleep(100);
        }
        return false;
    }

    private static double zeroIfNaN(double v) { return Double.isNaN(v) ? 0 : v; }

    private static String fmt(double v) { return Double.isNaN(v) ? "?" : Long.toString(Math.round(v)); }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
