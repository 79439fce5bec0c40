package dev.forkpoint.bench.soak;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Many stalled bodies at once: {@code connections} clients each send the head of a {@code POST /api/generate} with
 * {@code Content-Length: 1000} and 16 bytes of it, then nothing, for {@code hold}. Meanwhile the storm checks every
 * second (every quarter of the hold when that is shorter) that {@code GET /api/version} answers within the version deadline, and once that a one-token generation
 * answers within the deadline: a server that gives every stalled body a thread of a bounded pool stops answering.
 * At the end it counts the stalled clients the server answered (say, 408) or hung up on.
 */
final class StallStorm {
    record Result(int connections, int opened, double holdSeconds, int versionProbes, int versionFails, double versionMaxMs, Outcome generate,
                  double generateMs, int answeredByServer, int closedByServer, String detail) {
        boolean passed() { return versionFails == 0 && generate == Outcome.OK; }
    }

    private StallStorm() {}

    static Result run(Driver d, int connections, Duration hold, Duration versionDeadline, Events events) {
        Traffic t = d.holder().traffic();
        List<Socket> sockets = new ArrayList<>();
        String head = "POST /api/generate HTTP/1.1\r\nHost: " + t.http().hostHeader() + "\r\nContent-Type: application/json\r\n"
                + (t.apiKey() == null ? "" : "Authorization: Bearer " + t.apiKey() + "\r\n") + "Content-Length: 1000\r\n\r\n{\"model\":\"" ;
        byte[] bytes = head.getBytes(StandardCharsets.ISO_8859_1);
        String openError = null;
        for (int i = 0; i < connections; i++) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress("127.0.0.1", t.http().port()), 5000);
                OutputStream out = s.getOutputStream();
                out.write(bytes);
                out.flush();
                sockets.add(s);
            } catch (IOException e) {
                openError = RawHttp.describe(e);
                try {
                    s.close();
                } catch (IOException ignored) {
                    // best effort
                }
                break;
            }
        }
        events.add("stall storm", sockets.size() + " of " + connections + " stalled bodies open" + (openError == null ? "" : " (then: " + openError + ")")
                + "; holding " + hold.toSeconds() + " s");
        long end = System.nanoTime() + hold.toNanos();
        int probes = 0, fails = 0;
        double maxMs = 0;
        Outcome generate = null;
        double generateMs = -1;
        String detail = "";
        long generateAt = System.nanoTime() + hold.toNanos() / 3;
        long tickNanos = Math.min(1_000_000_000L, Math.max(50_000_000L, hold.toNanos() / 4));
        while (System.nanoTime() < end) {
            long tick = System.nanoTime();
            RawResponse r = t.http().exchange(t.get("/api/version"), ReadPlan.WHOLE, versionDeadline);
            probes++;
            maxMs = Math.max(maxMs, r.totalNanos() / 1e6);
            if (r.ending() != RawResponse.Ending.COMPLETE || r.status() != 200) {
                fails++;
                if (fails == 1) detail = "GET /api/version during the storm: " + (r.status() > 0 ? "HTTP " + r.status() : r.detail());
            }
            if (generate == null && System.nanoTime() >= generateAt) {
                Duration left = Duration.ofNanos(Math.max(1_000_000_000L, end - System.nanoTime()));
                RequestRecord g = d.heartbeat("storm", left.compareTo(d.deadline()) < 0 ? left : d.deadline());
                generate = g.outcome();
                generateMs = g.ms();
                if (g.outcome() != Outcome.OK) detail = (detail.isEmpty() ? "" : detail + "; ") + "one-token generation during the storm: " + g.outcome().label;
            }
            long sleep = tickNanos - (System.nanoTime() - tick);
            if (sleep > 0) {
                try {
                    Thread.sleep(Duration.ofNanos(sleep));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        int answered = 0, closed = 0;
        for (Socket s : sockets) {
            try {
                s.setSoTimeout(1);
                InputStream in = s.getInputStream();
                int b = in.read();
                if (b < 0) closed++;
                else answered++;
            } catch (SocketTimeoutException e) {
                // still waiting for the body: the server did not time it out
            } catch (IOException e) {
                closed++;
            }
            try {
                s.close();
            } catch (IOException ignored) {
                // best effort
            }
        }
        if (generate == null) generate = Outcome.HANG;
        events.add("stall storm", "over: version probes " + probes + " (" + fails + " failed, slowest " + Math.round(maxMs) + " ms), generation "
                + generate.label + "; the server answered " + answered + " and hung up on " + closed + " of " + sockets.size() + " stalled clients");
        return new Result(connections, sockets.size(), hold.toMillis() / 1e3, probes, fails, maxMs, generate, generateMs, answered, closed, detail);
    }
}
