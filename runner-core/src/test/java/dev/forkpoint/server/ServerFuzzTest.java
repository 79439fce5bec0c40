package dev.forkpoint.server;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.engine.FuzzCache;
import dev.forkpoint.engine.SchedulerStats;
import dev.forkpoint.fuzz.TinyLlama;
import dev.forkpoint.kvcache.CacheStats;
import dev.forkpoint.server.anthropic.AnthropicApi;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.server.openai.OpenAiApi;
import dev.forkpoint.server.runner.RunnerApi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed requests to a live server (all four APIs on the loopback interface) serving {@link TinyLlama}, whose
 * 64-token context keeps every generation short: every request is answered with a success or the API's client error
 * (400, 404, 413) — never a 500, in the status or in a stream's error event — and a request refused with a client
 * error leaves the prefix cache as it was. This reaches what the request-parsing targets cannot: the endpoints'
 * own checks, template rendering of mapped messages, context checks and the scheduler. An input is up to 8 requests
 * in a row, so later ones meet what earlier ones cached; afterwards the cache is emptied and must hold no page (a
 * leak otherwise), so every input starts from the same state. With {@code FUZZ_KEEP_CACHE=1} the cache is kept from
 * input to input instead: that finds what only a long history reaches, at the price of findings that one input alone
 * may not reproduce.
 */
class ServerFuzzTest {
    static final List<String> PATHS = List.of("/api/generate", "/api/chat", "/api/show", "/v1/chat/completions",
            "/v1/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/tokenize", "/api/embed", "/api/embeddings", "/v1/embeddings");
    static final Set<Integer> CLIENT_ERRORS = Set.of(400, 404, 413);
    private static ForkpointServer server;
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private static AutoCloseable loopbackOnly;
    private static java.util.logging.Level quiet;

    @BeforeAll
    static void start() throws IOException {
        quiet = java.util.logging.Logger.getLogger("").getLevel();
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);   // a log line per request otherwise
        // not ServerHarness: this target also runs from the bench jar, which has none of the client libraries it uses
        server = ForkpointServer.start(ServerConfig.defaults().withHost("127.0.0.1").withPort(0).withThreads(1).withParallel(2)
                        .withEnv(Map.of("HOME", "/nonexistent")).withMaxBodyBytes(64 * 1024).withModel(TinyLlama.ggufFile()),
                List.of(new OllamaApi(), new RunnerApi(), new OpenAiApi(), new AnthropicApi()));
        // one request per API before fuzzing: the first input is not charged for loading the handlers' classes
        for (String[] warm : new String[][]{{"/api/chat", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"stream\":true,\"options\":{\"num_predict\":2}}"},
                {"/v1/chat/completions", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":2,\"stream\":true}"},
                {"/v1/messages", "{\"model\":\"tiny\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"stream\":true}"},
                {"/v1/completions", "{\"Prompt\":\"Hi\",\"Options\":{\"num_predict\":2}}"}}) {
            try {
                post(warm[0], warm[1].getBytes(java.nio.charset.StandardCharsets.UTF_8));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (server != null) server.close();
        java.util.logging.Logger.getLogger("").setLevel(quiet);
        if (loopbackOnly != null) loopbackOnly.close();
    }

    @FuzzTest(maxDuration = "30s")
    void request(FuzzedDataProvider data) throws Exception {
        if (loopbackOnly == null) {   // Jazzer's agent (and its SSRF detector) is installed after @BeforeAll
            loopbackOnly = BugDetectors.allowNetworkConnections((host, port) -> host.equals("127.0.0.1") || host.equals("localhost"));
        }
        int requests = data.consumeInt(1, 8);   // several in a row: later ones meet what earlier ones cached
        for (int i = 0; i < requests; i++) {
            String path = data.pickValue(PATHS);
            byte[] body = i == requests - 1 ? data.consumeRemainingAsBytes() : data.consumeBytes(data.consumeInt(0, 2000));
            send(path, body);
        }
        idle();
        if (System.getenv("FUZZ_KEEP_CACHE") != null) return;
        int left = FuzzCache.pagesLeftAfterEvictingAll(served().model());
        check(left == 0, left + " KV pages still in use after the requests finished and the cache was emptied (a leak)");
    }

    static void send(String path, byte[] body) throws Exception {
        idle();
        CacheStats before = served().model().cacheStats();
        HttpResponse<String> r = post(path, body);
        int status = r.statusCode();
        if (System.getenv("FUZZ_DEBUG") != null) System.err.println("DEBUG " + path + " " + status + " " + abbreviate(r.body()) + " " + served().model().cacheStats());
        check(status == 200 || CLIENT_ERRORS.contains(status), path + " answered " + status + ": " + abbreviate(r.body()));
        check(!r.body().contains("internal error"), path + " answered " + status + " with an internal error: " + abbreviate(r.body()));
        if (status != 200) {
            idle();
            CacheStats after = served().model().cacheStats();
            check(after.nodes() == before.nodes() && after.cachedTokens() == before.cachedTokens() && after.usedPages() == before.usedPages(),
                    path + " refused with " + status + " but the cache changed: " + before + " → " + after);
        }
    }

    static HttpResponse<String> post(String path, byte[] body) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create(server.address() + path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static ServedModel served() {
        return server.models().loaded().getFirst();
    }

    /** Waits (briefly) until the scheduler has finished and released what the last request held. */
    static void idle() throws InterruptedException {
        for (int i = 0; i < 200; i++) {
            SchedulerStats s = served().scheduler().stats();
            if (s.running() == 0 && s.queued() == 0) return;
            Thread.sleep(5);
        }
    }

    static String abbreviate(String s) {
        return s.length() > 300 ? s.substring(0, 300) + "…" : s;
    }
}
