package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What an attacker or a careless client sends, over raw sockets, against a live server with every API: each answer is
 * a client error in JSON (never a 500, never Jetty's HTML, never a hang), and the server keeps serving. The regression
 * tests of issue 12's defects C (broken bodies and HTTP/0.9), D (stalled bodies, the API key before the body), E
 * (a non-streaming request is cancelled when its client leaves) and F (Host and Origin checks).
 */
@org.junit.jupiter.api.Timeout(120)
class HostileClientTest {
    static ServerHarness h;
    static final String KEY = "sekrit";
    static ServerHarness keyed;

    @BeforeAll
    static void start() {
        RequestGuards guards = new RequestGuards(Duration.ofSeconds(1), 4, List.of("proxy.example"), List.of("https://app.example"));
        h = ServerHarness.allApis(ServerHarness.config().withParallel(2).withMaxBodyBytes(64 * 1024).withGuards(guards));
        keyed = ServerHarness.allApis(ServerHarness.config().withApiKey(KEY).withMaxBodyBytes(1024).withGuards(guards));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
        if (keyed != null) keyed.close();
    }

    /** The status line and body of a raw exchange; the client half-closes after sending when {@code shut}. */
    record Answer(String statusLine, Map<String, String> headers, String body) {
        int status() { return Integer.parseInt(statusLine.split(" ")[1]); }

        JsonNode json() { return ServerHarness.json(body); }
    }

    static Answer raw(int port, String request, boolean shut, int timeoutMs) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(timeoutMs);
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            if (shut) s.shutdownOutput();
            return read(s.getInputStream());
        }
    }

    static Answer read(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        try {
            for (int n; (n = in.read(buf)) > 0; ) all.write(buf, 0, n);
        } catch (SocketTimeoutException e) {
            if (all.size() == 0) throw e;
        }
        String text = all.toString(StandardCharsets.UTF_8);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) throw new AssertionError("no complete response head: " + text);
        String[] head = text.substring(0, end).split("\r\n");
        Map<String, String> headers = new java.util.TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (int i = 1; i < head.length; i++) {
            int c = head[i].indexOf(':');
            headers.put(head[i].substring(0, c).trim(), head[i].substring(c + 1).trim());
        }
        return new Answer(head[0], headers, text.substring(end + 4));
    }

    static void assertJsonError(Answer a, int status, String contains) {
        assertEquals(status, a.status(), a.statusLine() + " " + a.body());
        assertTrue(a.headers().getOrDefault("Content-Type", "").startsWith("application/json"), "JSON, not Jetty's HTML: " + a);
        String message = a.json().toString();
        assertTrue(message.contains(contains), "'" + contains + "' in " + message);
        assertFalse(message.contains("Exception"), "no Java internals: " + message);
    }

    void stillServes(ServerHarness server) throws Exception {
        long t0 = System.nanoTime();
        Answer a = raw(server.server.port(), "GET /api/version HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", false, 5000);
        assertEquals(200, a.status(), a.body());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "answered at once");
    }

    // ---- C: broken bodies and protocols ----

    @Test
    void aBodyShorterThanItsContentLengthIsA400() throws Exception {
        Answer a = raw(h.server.port(), "POST /api/generate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\n\r\n{\"model\":", true, 10_000);
        assertJsonError(a, 400, "Content-Length");
        assertEquals("close", a.headers().get("Connection"));
        stillServes(h);
    }

    @Test
    void malformedChunkedFramingIsA400() throws Exception {
        Answer a = raw(h.server.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n", false, 10_000);
        assertEquals(400, a.status(), a.statusLine() + " " + a.body());
        assertTrue(a.headers().getOrDefault("Content-Type", "").startsWith("application/json"), a.toString());
        stillServes(h);
    }

    @Test
    void http09IsAnsweredInJson() throws Exception {
        Answer a = raw(h.server.port(), "GET /api/version\r\n\r\n", true, 10_000);
        assertJsonError(a, 505, "HTTP/0.9");
    }

    // ---- D: stalled bodies, bodies per client, the key before the body ----

    @Test
    void aStalledBodyTimesOutInSecondsAndStalledClientsCannotTakeTheServer() throws Exception {
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int i = 0; i < 40; i++) {
                Socket s = new Socket("127.0.0.1", h.server.port());
                s.setSoTimeout(15_000);
                s.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 1000\r\n\r\n{\"prompt\":").getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
                stalled.add(s);
            }
            Thread.sleep(200);
            stillServes(h);   // D: /api/version answers while 40 bodies stall
            int timedOut = 0, refused = 0;
            long t0 = System.nanoTime();
            for (Socket s : stalled) {
                Answer a = read(s.getInputStream());
                if (a.status() == 408) timedOut++;
                else if (a.status() == 429) refused++;
                else throw new AssertionError("a stalled body got " + a);
            }
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10), "stalled bodies are answered within seconds");
            assertEquals(4, timedOut, "bodies per client: 4 read at once, each timing out");
            assertEquals(36, refused, "the others are refused at once");
        } finally {
            for (Socket s : stalled) s.close();
        }
        stillServes(h);
    }

    @Test
    void theApiKeyIsCheckedBeforeTheBodyIsRead() throws Exception {
        // A body that never arrives: without the key the answer is 401 at once, not after a timeout.
        long t0 = System.nanoTime();
        Answer a = raw(keyed.server.port(), "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: 1000\r\n\r\n{\"Prompt\":", false, 10_000);
        assertEquals(401, a.status(), a.toString());
        assertTrue(System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(900), "before the body timeout");
        // An oversized body without the key: 401 (who you are comes first), not 413.
        Answer big = raw(keyed.server.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100000\r\n\r\n", false, 10_000);
        assertEquals(401, big.status(), big.toString());
        // The runner protocol's body on the shared path without the key: 401 as well.
        var r = keyed.post("/v1/completions", "{\"Prompt\":\"Once\",\"Options\":{\"num_predict\":2}}");
        assertEquals(401, r.statusCode(), r.body());
    }

    // ---- E: a non-streaming request is cancelled when its client leaves ----

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "/api/generate|{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"raw\":true,\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":400}}",
            "/api/chat|{\"model\":\"stories260K\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"options\":{\"temperature\":0,\"num_predict\":400}}",
            "/v1/chat/completions|{\"model\":\"stories260K\",\"temperature\":0,\"max_tokens\":400,\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}]}",
            "/v1/completions|{\"model\":\"stories260K\",\"temperature\":0,\"max_tokens\":400,\"prompt\":\"Once upon a time\"}",
            "/v1/messages|{\"model\":\"stories260K\",\"temperature\":0,\"max_tokens\":400,\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}]}",
    })
    void aNonStreamingRequestIsCancelledWhenItsClientLeaves(String path, String body) throws Exception {
        String cancelledKey = "forkpoint_generations_cancelled_total{model=\"stories260K.gguf\"}";
        double before = h.metrics().getOrDefault(cancelledKey, 0.0);
        h.probe().pace(5);
        try {
            try (Socket s = new Socket("127.0.0.1", h.server.port())) {
                OutputStream out = s.getOutputStream();
                byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
                out.write(("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: "
                        + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(bytes);
                out.flush();
                await(() -> h.stats().running() == 1, "the generation runs");
            }
            await(() -> metric(h, cancelledKey) > before, "the server notices the client left");
            await(() -> h.stats().running() == 0, "the generation ends");
        } finally {
            h.probe().pace(0);
        }
        assertTrue(h.stats().tokensGenerated() > 0);
        stillServes(h);
    }

    // ---- F: Host and Origin ----

    @Test
    void aForeignHostIsRefusedOnALoopbackServer() throws Exception {
        Answer a = raw(h.server.port(), "GET /api/tags HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n", false, 5000);
        assertJsonError(a, 403, "evil.example.com");
        Answer post = raw(h.server.port(), "POST /api/generate HTTP/1.1\r\nHost: evil.example.com:11434\r\nContent-Type: text/plain\r\n"
                + "Content-Length: 40\r\nConnection: close\r\n\r\n{\"model\":\"stories260K\",\"prompt\":\"hi\"}  ", false, 5000);
        assertJsonError(post, 403, "Host");
        for (String ok : List.of("localhost", "localhost:8080", "127.0.0.1:1", "[::1]:2", "10.1.2.3", "192.168.0.7:80", "foo.localhost",
                "mac.local", "proxy.example")) {
            Answer fine = raw(h.server.port(), "GET /api/version HTTP/1.1\r\nHost: " + ok + "\r\nConnection: close\r\n\r\n", false, 5000);
            assertEquals(200, fine.status(), ok + ": " + fine);
        }
        for (String bad : List.of("8.8.8.8", "localhost.evil.com", "127.0.0.1.nip.io", "proxy.example.evil")) {
            Answer refused = raw(h.server.port(), "GET /api/version HTTP/1.1\r\nHost: " + bad + "\r\nConnection: close\r\n\r\n", false, 5000);
            assertEquals(403, refused.status(), bad + ": " + refused);
        }
    }

    @Test
    void aCrossSiteOriginIsRefusedAndAllowedOnesGetCors() throws Exception {
        int before = (int) h.stats().tokensGenerated();
        Answer a = raw(h.server.port(), "POST /api/generate HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\n"
                + "Content-Type: text/plain\r\nContent-Length: 62\r\nConnection: close\r\n\r\n"
                + "{\"model\":\"stories260K\",\"prompt\":\"hi\",\"options\":{\"num_predict\":3}}", false, 5000);
        assertJsonError(a, 403, "Origin");
        assertEquals(before, (int) h.stats().tokensGenerated(), "nothing was generated for it");
        Answer local = raw(h.server.port(), "GET /api/version HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:3000\r\nConnection: close\r\n\r\n", false, 5000);
        assertEquals(200, local.status());
        assertEquals("http://localhost:3000", local.headers().get("Access-Control-Allow-Origin"));
        Answer configured = raw(h.server.port(), "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nOrigin: https://app.example\r\n"
                + "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, authorization\r\nConnection: close\r\n\r\n", false, 5000);
        assertEquals(204, configured.status(), configured.toString());
        assertEquals("https://app.example", configured.headers().get("Access-Control-Allow-Origin"));
        assertTrue(configured.headers().get("Access-Control-Allow-Headers").contains("authorization"));
        Answer preflightBad = raw(h.server.port(), "OPTIONS /api/chat HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\n"
                + "Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n", false, 5000);
        assertEquals(403, preflightBad.status());
    }

    @Test
    void originPatternsFollowOllamaOrigins() {
        RequestGuards g = RequestGuards.defaults().withOriginsFrom("chrome-extension://*, https://*.corp.example");
        assertTrue(g.allowsOrigin("chrome-extension://abcdef"));
        assertTrue(g.allowsOrigin("https://ui.corp.example"));
        assertTrue(g.allowsOrigin("vscode-webview://x"));
        assertTrue(g.allowsOrigin("http://127.0.0.1:5173"));
        assertFalse(g.allowsOrigin("https://corp.example.evil.com"));
        assertFalse(g.allowsOrigin("http://localhost.evil.com"));
        assertFalse(g.allowsOrigin("null"));
        assertTrue(g.allowsHost("evil.example.com", false), "a server bound to a public address serves any Host");
    }

    static double metric(ServerHarness server, String key) {
        try {
            return server.metrics().getOrDefault(key, 0.0);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting: " + what);
            Thread.sleep(10);
        }
    }
}
