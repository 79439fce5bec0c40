package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The soak's parts without a Forkpoint server: the raw HTTP client against a scripted socket server that misbehaves
 * on purpose (so that every class of outcome — 5xx, hang, reset, accepted fault, drop — is shown to be detected), the
 * classifier's rules, the replies of each API, the Prometheus and GC.heap_info parsers, the seeded mix, and the JVM
 * flags kept equal to the launcher's.
 */
class SoakPartsTest {
    private ServerSocket listener;
    private final List<Socket> accepted = new ArrayList<>();

    @AfterEach
    void close() throws IOException {
        if (listener != null) listener.close();
        for (Socket s : accepted) s.close();
    }

    /** A one-connection-at-a-time server: {@code script} gets the request head (and body) bytes read so far and the output. */
    private RawHttp serve(BiConsumer<InputStream, OutputStream> script) throws IOException {
        listener = new ServerSocket(0);
        Thread.ofVirtual().start(() -> {
            while (!listener.isClosed()) {
                try {
                    Socket s = listener.accept();
                    synchronized (accepted) {
                        accepted.add(s);
                    }
                    Thread.ofVirtual().start(() -> {
                        try {
                            script.accept(s.getInputStream(), s.getOutputStream());
                        } catch (IOException | RuntimeException e) {
                            // the client went away
                        }
                    });
                } catch (IOException e) {
                    return;
                }
            }
        });
        return new RawHttp("127.0.0.1", listener.getLocalPort());
    }

    private static String readHead(InputStream in) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try {
            int c, state = 0;
            while ((c = in.read()) >= 0) {
                b.write(c);
                state = (c == '\r' || c == '\n') ? state + 1 : 0;
                if (state == 4) break;
            }
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
        return b.toString(StandardCharsets.ISO_8859_1);
    }

    private static void write(OutputStream out, String s) {
        try {
            out.write(s.getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    private static RawRequest post(RawHttp http, byte[] body) {
        return new RawRequest("POST", "/api/generate", List.of("Host: " + http.hostHeader()), new BodyPlan.Whole(body));
    }

    private static final byte[] BODY = "{\"model\":\"m\",\"prompt\":\"hi\"}".getBytes(StandardCharsets.UTF_8);

    @Test
    void aChunkedStreamIsReadAndClassifiedOk() throws IOException {
        RawHttp http = serve((in, out) -> {
            readHead(in);
            write(out, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n");
            for (String line : List.of("{\"response\":\"Hel\",\"done\":false}\n", "{\"response\":\"lo\",\"done\":false}\n", "{\"response\":\"\",\"done\":true}\n")) {
                write(out, Integer.toHexString(line.length()) + "\r\n" + line + "\r\n");
            }
            write(out, "0\r\n\r\n");
        });
        RawResponse r = http.exchange(post(http, BODY), ReadPlan.WHOLE, Duration.ofSeconds(5));
        assertEquals(RawResponse.Ending.COMPLETE, r.ending(), r.detail());
        assertEquals(200, r.status());
        Verdict v = Classifier.classify(Api.OLLAMA_GENERATE, true, null, r);
        assertEquals(Outcome.OK, v.outcome(), v.detail());
        assertEquals("Hello", v.text());
        // the same stream without its final line is not a finished reply
        assertEquals(Outcome.MALFORMED, Classifier.classify(Api.OLLAMA_GENERATE, true, null, withBody(r, "{\"response\":\"Hel\",\"done\":false}\n")).outcome());
    }

    @Test
    void aServerThatNeverAnswersIsAHangAtTheDeadline() throws IOException {
        RawHttp http = serve((in, out) -> {
            readHead(in);
            sleep(5000);
        });
        long t0 = System.nanoTime();
        RawResponse r = http.exchange(post(http, BODY), ReadPlan.WHOLE, Duration.ofMillis(300));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(RawResponse.Ending.TIMEOUT, r.ending());
        assertTrue(ms >= 290 && ms < 3000, "took " + ms + " ms");
        assertEquals(Outcome.HANG, Classifier.classify(Api.OLLAMA_GENERATE, false, null, r).outcome());
    }

    @Test
    void aStreamThatStopsMidBodyIsAHangAndAClosedOneAReset() throws IOException {
        RawHttp http = serve((in, out) -> {
            String head = readHead(in);
            write(out, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"resp");
            if (head.contains("close-early")) {
                try {
                    out.close();
                } catch (IOException ignored) {
                    // gone
                }
            } else {
                sleep(5000);
            }
        });
        RawResponse hang = http.exchange(post(http, BODY), ReadPlan.WHOLE, Duration.ofMillis(300));
        assertEquals(Outcome.HANG, Classifier.classify(Api.OLLAMA_GENERATE, false, null, hang).outcome());
        assertEquals(200, hang.status());
        RawRequest early = new RawRequest("POST", "/close-early", List.of("Host: x"), new BodyPlan.Whole(BODY));
        RawResponse reset = http.exchange(early, ReadPlan.WHOLE, Duration.ofSeconds(5));
        assertEquals(RawResponse.Ending.RESET, reset.ending());
        assertEquals(Outcome.RESET, Classifier.classify(Api.OLLAMA_GENERATE, false, null, reset).outcome());
    }

    @Test
    void closedAndRefusedConnectionsAreResets() throws IOException {
        RawHttp http = serve((in, out) -> {
            try {
                in.close();
            } catch (IOException ignored) {
                // gone
            }
        });
        assertEquals(Outcome.RESET, Classifier.classify(Api.OPENAI_CHAT, false, null, http.exchange(post(http, BODY), ReadPlan.WHOLE, Duration.ofSeconds(5))).outcome());
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();   // nothing listens there once closed
        }
        RawHttp gone = new RawHttp("127.0.0.1", port);
        RawResponse r = gone.exchange(post(gone, BODY), ReadPlan.WHOLE, Duration.ofSeconds(2));
        assertEquals(RawResponse.Ending.RESET, r.ending());
        assertTrue(r.detail().contains("refused"), r.detail());
    }

    @Test
    void serverErrorsClientErrorsAndAcceptedFaultsAreToldApart() throws IOException {
        RawHttp http = serve((in, out) -> {
            String head = readHead(in);
            String path = head.split(" ")[1];
            String reply = switch (path) {
                case "/500" -> response("500 Server Error", "", "{\"error\":\"internal error: boom\"}");
                case "/503" -> response("503 Busy", "Retry-After: 1\r\n", "{}");
                case "/400" -> response("400 Bad Request", "", "{\"error\":\"bad!\"}");
                case "/400html" -> response("400 Bad Request", "", "<h1>Bad</h1>");
                default -> response("200 OK", "", "{\"response\":\"fine\",\"done\":true}");
            };
            write(out, reply);
        });
        Fault badJson = Fault.BAD_JSON;
        assertEquals(Outcome.SERVER_ERROR, classify(http, "/500", badJson));
        assertEquals(Outcome.BUSY, classify(http, "/503", null));
        assertEquals(Outcome.CLIENT_ERROR, classify(http, "/400", badJson));
        assertEquals(Outcome.BAD_ERROR_SHAPE, classify(http, "/400html", badJson), "an API-level fault needs the API's JSON error");
        assertEquals(Outcome.CLIENT_ERROR, classify(http, "/400html", Fault.MALFORMED_CHUNKED), "an HTTP-level fault may get any 4xx");
        assertEquals(Outcome.ACCEPTED_FAULT, classify(http, "/200", Fault.BAD_HOST));
        assertEquals(Outcome.OK, classify(http, "/200", Fault.ZERO_MAX_TOKENS), "a fault a server may serve");
        assertEquals(Outcome.OK, classify(http, "/200", null));
        assertEquals(Outcome.CLIENT_ERROR, classify(http, "/400", null), "a 4xx to a well-formed request is still a 4xx (the run fails it)");
    }

    private static String response(String status, String headers, String body) {
        return "HTTP/1.1 " + status + "\r\n" + headers + "Content-Length: " + utf8(body).length + "\r\n\r\n" + body;
    }

    private static Outcome classify(RawHttp http, String path, Fault fault) {
        RawRequest req = new RawRequest("POST", path, List.of("Host: " + http.hostHeader()), new BodyPlan.Whole(BODY));
        return Classifier.classify(Api.OLLAMA_GENERATE, false, fault, http.exchange(req, ReadPlan.WHOLE, Duration.ofSeconds(5))).outcome();
    }

    @Test
    void anErrorAnsweredBeforeTheBodyIsReadIsSeen() throws IOException {
        RawHttp http = serve((in, out) -> {
            readHead(in);
            write(out, response("413 Payload Too Large", "Connection: close\r\n", "{\"error\":\"too big\"}"));
            try {
                in.readAllBytes();   // answered first, then drained: the client reads the 413 while it is still sending
                in.close();
            } catch (IOException ignored) {
                // gone
            }
        });
        byte[] big = new byte[8 << 20];
        RawResponse r = http.exchange(post(http, big), ReadPlan.WHOLE, Duration.ofSeconds(10));
        assertEquals(413, r.status(), r.detail());
        assertEquals(Outcome.CLIENT_ERROR, Classifier.classify(Api.OLLAMA_GENERATE, false, Fault.OVERSIZED_BODY, r).outcome());
    }

    @Test
    void faultyBodiesGoOutAsPlanned() throws Exception {
        CompletableFuture<String> seen = new CompletableFuture<>();
        RawHttp http = serve((in, out) -> {
            try {
                seen.complete(new String(in.readAllBytes(), StandardCharsets.ISO_8859_1));   // until the client half-closes
            } catch (IOException e) {
                seen.complete("error " + e);
            }
            write(out, response("400 Bad", "", "{\"error\":\"x\"}"));
        });
        http.exchange(new RawRequest("POST", "/api/chat", List.of("Host: h"), new BodyPlan.Truncated("{\"mo".getBytes(StandardCharsets.UTF_8), 40)),
                ReadPlan.WHOLE, Duration.ofSeconds(5));
        String wire = seen.get(5, TimeUnit.SECONDS);
        assertTrue(wire.startsWith("POST /api/chat HTTP/1.1\r\nHost: h\r\nContent-Length: 40\r\nConnection: close\r\n\r\n"), wire);
        assertTrue(wire.endsWith("\r\n\r\n{\"mo"), "4 of the 40 declared bytes, then the end of the stream: " + wire);

        CompletableFuture<String> chunked = new CompletableFuture<>();
        listener.close();
        http = serve((in, out) -> {
            try {
                chunked.complete(new String(in.readAllBytes(), StandardCharsets.ISO_8859_1));
            } catch (IOException e) {
                chunked.complete("error " + e);
            }
        });
        http.exchange(new RawRequest("POST", "/x", List.of("Host: h", "Transfer-Encoding: chunked"), new BodyPlan.Raw("zz\r\n{}\r\n0\r\n\r\n".getBytes(StandardCharsets.UTF_8), true)),
                ReadPlan.WHOLE, Duration.ofMillis(500));
        assertTrue(chunked.get(5, TimeUnit.SECONDS).endsWith("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"), chunked.get());
    }

    @Test
    void theClientDropsAfterBodyBytesOrOnASignal() throws IOException {
        RawHttp http = serve((in, out) -> {
            readHead(in);
            write(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            String line = "{\"response\":\"xxxxxxxxx\",\"done\":false}\n";
            for (int i = 0; i < 200; i++) {
                write(out, Integer.toHexString(line.length()) + "\r\n" + line + "\r\n");
                sleep(5);
            }
        });
        RawResponse r = http.exchange(post(http, BODY), new ReadPlan.DropAfterBytes(100), Duration.ofSeconds(5));
        assertEquals(RawResponse.Ending.DROPPED, r.ending(), () -> r.detail() + "; status " + r.status() + ", " + r.bodyBytes() + " body bytes");
        assertTrue(r.bodyBytes() >= 100 && r.bodyBytes() < 1000, "dropped after " + r.bodyBytes());
        assertEquals(Outcome.DISCONNECTED, Classifier.classify(Api.OLLAMA_GENERATE, true, null, r).outcome());

        var signal = new java.util.concurrent.CountDownLatch(1);
        Thread.ofVirtual().start(() -> {
            sleep(100);
            signal.countDown();
        });
        RawResponse s = http.exchange(post(http, BODY), new ReadPlan.DropOnSignal(signal), Duration.ofSeconds(5));
        assertEquals(RawResponse.Ending.DROPPED, s.ending());
        assertTrue(s.totalNanos() < 900_000_000L, "dropped after " + s.totalNanos() / 1e6 + " ms");
    }

    @Test
    void repliesOfEveryApiAreRead() {
        assertEquals(new Api.Reply("hi", true, null), Api.OLLAMA_CHAT.parse(utf8("{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true}"), false));
        assertEquals(new Api.Reply("ab", true, null), Api.OLLAMA_CHAT.parse(utf8("{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"message\":{\"content\":\"b\"},\"done\":false}\n{\"message\":{\"content\":\"\"},\"done\":true}\n"), true));
        assertEquals(new Api.Reply("a", false, "internal error: x"), Api.OLLAMA_GENERATE.parse(utf8("{\"response\":\"a\"}\n{\"error\":\"internal error: x\"}\n"), true));
        assertEquals(new Api.Reply("yo", true, null), Api.OPENAI_CHAT.parse(utf8("{\"choices\":[{\"message\":{\"content\":\"yo\"}}]}"), false));
        assertEquals(new Api.Reply("ab", true, null), Api.OPENAI_CHAT.parse(utf8("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n: keep-alive\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n"), true));
        assertEquals(new Api.Reply("a", false, null), Api.OPENAI_COMPLETIONS.parse(utf8("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"), true), "no [DONE]");
        assertEquals(new Api.Reply("t", true, null), Api.OPENAI_COMPLETIONS.parse(utf8("{\"choices\":[{\"text\":\"t\"}]}"), false));
        assertEquals(new Api.Reply("xy", true, null), Api.ANTHROPIC_MESSAGES.parse(utf8("{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"xy\"}]}"), false));
        assertEquals(new Api.Reply("xy", true, null), Api.ANTHROPIC_MESSAGES.parse(utf8("event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
                + "event: content_block_delta\ndata: {\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\nevent: content_block_delta\ndata: {\"delta\":{\"text\":\"y\"}}\n\n"
                + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), true));
        assertEquals(null, Api.OPENAI_CHAT.parse(utf8("<html>"), false));

        assertTrue(Api.OLLAMA_GENERATE.isErrorShape(utf8("{\"error\":\"bad\"}")));
        assertFalse(Api.OLLAMA_GENERATE.isErrorShape(utf8("{\"error\":{\"message\":\"bad\"}}")));
        assertTrue(Api.OPENAI_COMPLETIONS.isErrorShape(utf8("{\"error\":{\"message\":\"bad\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}")));
        assertFalse(Api.OPENAI_COMPLETIONS.isErrorShape(utf8("{\"error\":\"bad\"}")));
        assertTrue(Api.ANTHROPIC_MESSAGES.isErrorShape(utf8("{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"m\"}}")));
        assertFalse(Api.ANTHROPIC_MESSAGES.isErrorShape(utf8("{\"error\":{\"type\":\"x\",\"message\":\"m\"}}")));
    }

    @Test
    void requestBodiesCarryTheTokenLimitWhereEachApiWantsIt() {
        ObjectNode o = Api.OLLAMA_GENERATE.body("m", "p", 7, true, 0.0, 1);
        assertEquals(7, o.at("/options/num_predict").asInt());
        assertEquals("p", o.get("prompt").asText());
        ObjectNode a = Api.ANTHROPIC_MESSAGES.body("m", "p", 7, false, 0.0, 1);
        assertEquals(7, a.get("max_tokens").asInt());
        assertEquals("p", a.at("/messages/0/content").asText());
        assertTrue(Api.ANTHROPIC_MESSAGES.authHeaders("k").contains("x-api-key: k"));
        assertEquals(List.of("Authorization: Bearer k"), Api.OPENAI_CHAT.authHeaders("k"));
    }

    @Test
    void everyFaultBuildsOnEveryApiItAppliesTo() {
        Traffic t = new Traffic(new RawHttp("127.0.0.1", 1), "m", "s3cret");
        Fault.Settings s = new Fault.Settings(4096, Duration.ofSeconds(1));
        Random rng = new Random(1);
        int built = 0;
        for (Fault f : Fault.values()) {
            for (Api api : Api.values()) {
                if (!f.applies(api, true)) continue;
                for (int v = 0; v < f.variants; v++) {
                    Fault.Injection in = f.build(api, v, rng, t, s, Duration.ofSeconds(1));
                    assertNotNull(in.request());
                    assertFalse(in.variant().isEmpty());
                    built++;
                    if (f == Fault.MISSING_HOST) assertTrue(in.request().headers().stream().noneMatch(h -> h.startsWith("Host:")));
                    if (f == Fault.WRONG_API_KEY || f == Fault.MISSING_API_KEY) {
                        assertTrue(in.request().headers().stream().noneMatch(h -> h.contains("s3cret")), in.request().headers().toString());
                    }
                    if (f == Fault.OVERSIZED_BODY && in.request().body() instanceof BodyPlan.Whole w) assertEquals(4096 + 1024, w.bytes().length);
                }
            }
        }
        assertTrue(built > 80, "built " + built);
        assertFalse(Fault.WRONG_API_KEY.applies(Api.OPENAI_CHAT, false), "no key, no key faults");
        assertTrue(Fault.HUGE_NUM_CTX.applies(Api.OLLAMA_CHAT, false) && !Fault.HUGE_NUM_CTX.applies(Api.OPENAI_CHAT, false));
    }

    @Test
    void theMixIsSeededAndSkipsQuarantinedFaults() {
        ActionMix a = new ActionMix(List.of(Fault.values()), 0.5, 0.2, 0.1, 32, 10, true);
        ActionMix b = new ActionMix(List.of(Fault.values()), 0.5, 0.2, 0.1, 32, 10, true);
        Random ra = new Random(9), rb = new Random(9);
        List<String> sa = new ArrayList<>(), sb = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            sa.add(describe(a.next(ra)));
            sb.add(describe(b.next(rb)));
        }
        assertEquals(sa, sb);
        a.quarantine(Fault.HUGE_MAX_TOKENS);
        Random r = new Random(3);
        boolean anyFault = false, anyDisconnect = false, anyReference = false;
        for (int i = 0; i < 2000; i++) {
            Action x = a.next(r);
            if (x instanceof Action.Inject in) {
                anyFault = true;
                assertNotEquals(Fault.HUGE_MAX_TOKENS, in.fault());
            }
            anyDisconnect |= x instanceof Action.Disconnect;
            anyReference |= x instanceof Action.Reference;
        }
        assertTrue(anyFault && anyDisconnect && anyReference);
    }

    private static String describe(Action a) {
        return switch (a) {
            case Action.Complete c -> "c " + c.api() + c.stream() + c.prompt() + c.maxTokens();
            case Action.Disconnect d -> "d " + d.api() + d.drop();
            case Action.Inject i -> "f " + i.fault() + i.api() + i.variant();
            case Action.Reference r -> "r " + r.index();
        };
    }

    @Test
    void prometheusTextAndHeapInfoAreParsed() {
        PromText p = PromText.parse("""
                # HELP forkpoint_kv_pages_used KV cache pages in use
                # TYPE forkpoint_kv_pages_used gauge
                forkpoint_kv_pages_used{model="a"} 3.0
                forkpoint_kv_pages_used{model="b"} 4.0
                forkpoint_queue_depth{model="a"} 0.0
                forkpoint_http_requests_total{endpoint="/api/generate",method="POST",status="500"} 2.0
                forkpoint_http_requests_total{endpoint="/api/generate",method="POST",status="200"} 9.0
                forkpoint_http_requests_total{endpoint="/x",method="GET",status="503"} 1.0
                """);
        assertEquals(7.0, p.get(PromText.KV_USED));
        assertEquals(0.0, p.get(PromText.QUEUE));
        assertEquals(12.0, p.get(PromText.REQUESTS));
        assertEquals(3.0, p.server5xx());
        assertTrue(Double.isNaN(p.get(PromText.RUNNING)));

        String info = """
                12345:
                PSYoungGen      total 229376K, used 1024K [0x00000007f0000000, 0x0000000800000000, 0x0000000800000000)
                  eden space 196608K, 0% used [0x00000007f0000000,0x00000007f0000000,0x00000007fc000000)
                ParOldGen       total 124928K, used 2925K [0x0000000687400000, 0x000000068ee00000, 0x00000007f0000000)
                  object space 124928K, 2% used [0x0000000687400000,0x00000006876db558,0x000000068ee00000)
                 Metaspace       used 700K, committed 896K, reserved 1114112K
                """;
        assertEquals(new HeapAfterGc.Heap(1024 + 2925, 229376 + 124928), HeapAfterGc.parse(info));
        assertEquals(HeapAfterGc.Heap.UNKNOWN, HeapAfterGc.parse("Command executed successfully"));
    }

    @Test
    void theJvmFlagsAreTheLaunchers() throws IOException {
        Path launcher = Path.of("..", "forkpoint");
        if (!Files.isRegularFile(launcher)) launcher = Path.of("forkpoint");
        String script = Files.readString(launcher);
        Matcher m = Pattern.compile("JVM_FLAGS=\\(([^)]*)\\)", Pattern.DOTALL).matcher(script);
        assertTrue(m.find(), "no JVM_FLAGS=(…) in " + launcher);
        List<String> flags = List.of(m.group(1).trim().split("\\s+"));
        assertEquals(flags, ServerLaunch.LAUNCHER_JVM_FLAGS, "keep ServerLaunch.LAUNCHER_JVM_FLAGS equal to the launcher's JVM_FLAGS");
    }

    private static RawResponse withBody(RawResponse r, String body) {
        byte[] b = utf8(body);
        return new RawResponse(r.status(), Map.copyOf(r.headers()), b, b.length, r.ending(), r.detail(), r.ttfbNanos(), r.totalNanos());
    }

    private static byte[] utf8(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
