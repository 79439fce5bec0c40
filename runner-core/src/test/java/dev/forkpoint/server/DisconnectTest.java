package dev.forkpoint.server;

import dev.forkpoint.engine.SchedulerStats;
import dev.forkpoint.kvcache.CacheStats;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A client that disconnects mid-stream (NDJSON and both SSE APIs): its generation is cancelled within a scheduler step
 * of the server noticing, and every KV page it held is released.
 *
 * <p>The baseline is an empty pool: the prefix cache is emptied before the request (0 pages used). After the
 * disconnect nothing runs (0 live, 0 reserved pages); the pages still used are the prefix cache's (the cancelled
 * generation's committed tokens are cached, as designed); emptying the cache again must bring the pool back to 0 used
 * pages, all free. A page the cancelled sequence kept (not released, or its cached prefix left locked) would stay
 * used. Each forward pass is paced (a few ms) so that 400 tokens cannot be generated before the disconnect is noticed.
 */
class DisconnectTest {
    static final int N = 400;
    static ServerHarness h;

    @BeforeAll
    static void start() {
        h = ServerHarness.allApis(ServerHarness.config().withParallel(2));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "/api/generate|{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"raw\":true,\"options\":{\"temperature\":0,\"num_predict\":400}}|\"done\":false",
            "/v1/chat/completions|{\"model\":\"stories260K\",\"stream\":true,\"temperature\":0,\"max_tokens\":400,\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}]}|\"content\":\"",
            "/v1/messages|{\"model\":\"stories260K\",\"stream\":true,\"temperature\":0,\"max_tokens\":400,\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}]}|text_delta",
    })
    void aDisconnectedStreamIsCancelledAndItsPagesAreReleased(String path, String body, String contentMarker) throws Exception {
        String cancelledKey = "forkpoint_generations_cancelled_total{model=\"stories260K.gguf\"}";
        h.probe().evictCache();
        SchedulerStats baseline = h.stats();
        assertEquals(0, baseline.kvPagesUsed(), "baseline: an empty pool");
        assertEquals(baseline.kvPagesTotal(), baseline.kvPagesFree());
        double cancelledBefore = h.metrics().getOrDefault(cancelledKey, 0.0);
        long generatedBefore = baseline.tokensGenerated();

        h.probe().pace(5);
        long generatedWhenNoticed;
        try {
            try (Socket s = new Socket("127.0.0.1", h.server.port())) {
                OutputStream out = s.getOutputStream();
                byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
                out.write(("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: "
                        + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(bytes);
                out.flush();
                var in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
                String status = in.readLine();
                assertTrue(status.startsWith("HTTP/1.1 200"), status);
                String line;
                while ((line = in.readLine()) != null && !line.contains(contentMarker)) { }
                assertTrue(line != null, "got generated text before disconnecting");
                assertEquals(1, h.stats().running(), "the generation is running when the client leaves");
            }
            await(() -> metric(cancelledKey) > cancelledBefore, "the server notices the disconnect");
            generatedWhenNoticed = h.stats().tokensGenerated();
            await(() -> h.stats().running() == 0, "the generation ends");
            // the running count drops when the scheduler ends the generation; its pages go back as it closes, just after
            await(() -> h.stats().kvPagesLive() == 0, "the generation's pages go back to the pool");
        } finally {
            h.probe().pace(0);
        }
        SchedulerStats after = h.stats();
        assertEquals(cancelledBefore + 1, metric(cancelledKey), "cancelled once");
        assertTrue(after.tokensGenerated() - generatedWhenNoticed <= 1,
                "at most the step in progress completes after the cancellation: " + (after.tokensGenerated() - generatedWhenNoticed));
        assertTrue(after.tokensGenerated() - generatedBefore < N, "cancelled before its end");
        assertEquals(0, after.kvPagesLive(), "no live pages");
        assertEquals(0, after.kvPagesReserved(), "no reserved pages");
        CacheStats cache = h.probe().cacheStats();
        assertTrue(cache.cachedTokens() > 0, "the committed tokens are in the prefix cache");
        assertEquals(after.kvPagesUsed(), cache.usedPages(), "the pages used are the cache's");

        h.probe().evictCache();
        SchedulerStats emptied = h.stats();
        assertEquals(0, emptied.kvPagesUsed(), "back to the baseline: every page the cancelled sequence held is free");
        assertEquals(emptied.kvPagesTotal(), emptied.kvPagesFree());

        // and the server keeps serving, with the right output
        String expected = h.greedy("Once upon a time", 8).text();
        assertEquals(expected, h.postJson("/api/generate", "{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"raw\":true,"
                + "\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":8}}").get("response").asText());
    }

    private static double metric(String key) {
        try {
            return h.metrics().getOrDefault(key, 0.0);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting: " + what);
            Thread.sleep(10);
        }
    }
}
