package dev.forkpoint.server;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.security.MessageDigest;
import java.nio.file.Files;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 12's defects G (log forging), H (a huge prompt is refused by its size before it is tokenized) and the smaller
 * ones: Jackson's internals in 400 messages, {@code /v1/models/{alias}}, and a wrong {@code @sha256:} digest.
 */
@Timeout(120)
class RequestHygieneTest {
    static ServerHarness h;
    static final List<LogRecord> records = new CopyOnWriteArrayList<>();
    static final Handler capture = new Handler() {
        public void publish(LogRecord r) { records.add(r); }

        public void flush() { }

        public void close() { }
    };

    @BeforeAll
    static void start() {
        Logger.getLogger("dev.forkpoint").addHandler(capture);
        h = ServerHarness.allApis(ServerHarness.config());
    }

    @AfterAll
    static void stop() {
        Logger.getLogger("dev.forkpoint").removeHandler(capture);
        if (h != null) h.close();
    }

    @Test
    void aModelNameWithNewlinesCannotForgeLogLines() throws Exception {
        records.clear();
        String forged = "nope\\nINFO: POST /api/admin 200 0.1 ms (forged)\\r\\n";
        HttpResponse<String> r = h.post("/api/generate", "{\"model\":\"" + forged + "\",\"prompt\":\"hi\"}");
        assertEquals(404, r.statusCode(), r.body());
        Thread.sleep(100);
        boolean seen = false;
        for (LogRecord rec : records) {
            String text = new java.util.logging.SimpleFormatter().formatMessage(rec);
            assertFalse(text.contains("\n") || text.contains("\r"), "one line per record: " + text);
            seen |= text.contains("forged");
        }
        assertTrue(seen, "the request was logged, escaped");
    }

    static final int HUGE = 10 << 20;

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "/api/generate|{\"model\":\"stories260K\",\"stream\":false,\"prompt\":\"%s\"}|prompt",
            "/api/generate|{\"model\":\"stories260K\",\"stream\":false,\"raw\":true,\"prompt\":\"%s\"}|prompt",
            "/api/chat|{\"model\":\"stories260K\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}|messages",
            "/v1/chat/completions|{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}|messages",
            "/v1/completions|{\"model\":\"stories260K\",\"prompt\":\"%s\"}|prompt",
            "/v1/messages|{\"model\":\"stories260K\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}|messages",
            "/v1/messages/count_tokens|{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}|messages",
    })
    void aHugePromptIsRefusedByItsSizeBeforeTokenizing(String path, String template, String field) throws Exception {
        String body = template.formatted("Once upon a time ".repeat(HUGE / 17));
        long t0 = System.nanoTime();
        HttpResponse<String> r = h.post(path, body);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains(field) && r.body().contains("num_ctx"), r.body());
        assertTrue(ms < 3000, path + " took " + ms + " ms (the full prompt is tokenized in seconds on this machine)");
    }

    @Test
    void aPromptJustInsideTheBoundIsStillTokenizedAndCheckedExactly() throws Exception {
        // Below the size bound the exact check answers, with the token count.
        String body = "{\"model\":\"stories260K\",\"stream\":false,\"raw\":true,\"prompt\":\"" + "Once upon a time ".repeat(800) + "\"}";
        HttpResponse<String> r = h.post("/api/generate", body);
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().matches(".*prompt is \\d+ tokens but num_ctx is \\d+.*"), r.body());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "/api/generate|{\"model\":\"stories260K\",\"prompt\":\"hi\",\"options\":{\"seed\":1%s}}",
            "/api/chat|{\"model\":\"stories260K\",\"messages\":7}",
            "/v1/chat/completions|{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":1%s}",
            "/v1/messages|{\"model\":\"stories260K\",\"max_tokens\":\"five\",\"messages\":[]}",
            "/api/chat|{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":{\"a\":1}}]}",
    })
    void errorsSayNothingOfJackson(String path, String template) throws Exception {
        HttpResponse<String> r = h.post(path, template.replace("%s", "0".repeat(2000)));
        assertEquals(400, r.statusCode(), r.body());
        for (String internal : List.of("StreamReadConstraints", "JsonNode", "com.fasterxml", "java.lang", "`")) {
            assertFalse(r.body().contains(internal), "'" + internal + "' in " + r.body());
        }
    }

    @Test
    void modelsAnswerToTheAliasesChatAccepts() throws Exception {
        for (String alias : List.of("stories260K", "stories260K:latest", "STORIES260K.gguf")) {
            HttpResponse<String> r = h.get("/v1/models/" + alias);
            assertEquals(200, r.statusCode(), alias + ": " + r.body());
            assertEquals("stories260K.gguf", ServerHarness.json(r.body()).get("id").asText());
        }
        assertEquals(404, h.get("/v1/models/nope").statusCode());
    }

    @Test
    void aModelNameWithTheWrongDigestIsNotServed() throws Exception {
        String right = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(h.modelFile)));
        String wrong = "0".repeat(64);
        HttpResponse<String> bad = h.post("/api/generate", "{\"model\":\"stories260K@sha256:" + wrong + "\",\"prompt\":\"hi\",\"stream\":false,\"options\":{\"num_predict\":1}}");
        assertEquals(404, bad.statusCode(), bad.body());
        assertTrue(bad.body().contains(right) && bad.body().contains(wrong), bad.body());
        HttpResponse<String> good = h.post("/api/generate", "{\"model\":\"stories260K@sha256:" + right + "\",\"prompt\":\"hi\",\"stream\":false,\"options\":{\"num_predict\":1}}");
        assertEquals(200, good.statusCode(), good.body());
        HttpResponse<String> malformed = h.post("/api/generate", "{\"model\":\"stories260K@md5:abc\",\"prompt\":\"hi\"}");
        assertEquals(400, malformed.statusCode(), malformed.body());
    }
}
