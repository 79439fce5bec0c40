package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.server.runner.RunnerApi;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A live server on an ephemeral port serving stories260K, a plain HTTP client, and the engine as the reference. */
final class ServerHarness implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String MODEL = "stories260K";

    final Path modelFile;
    final ForkpointServer server;
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private LoadedModel reference;

    ServerHarness(ServerConfig base) {
        modelFile = TestData.shared("models/stories260K.gguf");
        server = ForkpointServer.start(base.withModel(modelFile), List.of(new OllamaApi(), new RunnerApi()));
    }

    static ServerConfig config() {
        return ServerConfig.defaults().withPort(0).withThreads(1).withParallel(2).withEnv(Map.of("HOME", "/nonexistent"));
    }

    String url(String path) { return server.address() + path; }

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(url(path))).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> post(String path, String body, String... headers) throws IOException, InterruptedException {
        var b = HttpRequest.newBuilder(URI.create(url(path))).POST(HttpRequest.BodyPublishers.ofString(body))
                .header("Content-Type", "application/json");
        if (headers.length > 0) b.headers(headers);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    JsonNode postJson(String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> r = post(path, body);
        if (r.statusCode() != 200) throw new AssertionError(path + " → " + r.statusCode() + ": " + r.body());
        return JSON.readTree(r.body());
    }

    /** The NDJSON lines of a streamed response. */
    List<JsonNode> postLines(String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> r = post(path, body);
        if (r.statusCode() != 200) throw new AssertionError(path + " → " + r.statusCode() + ": " + r.body());
        if (!r.headers().firstValue("Content-Type").orElse("").startsWith("application/x-ndjson")) {
            throw new AssertionError("content type " + r.headers().firstValue("Content-Type"));
        }
        List<JsonNode> out = new ArrayList<>();
        for (String line : r.body().split("\n")) if (!line.isEmpty()) out.add(JSON.readTree(line));
        return out;
    }

    /** The engine itself, loaded separately: what the server must reproduce. */
    synchronized LoadedModel reference() throws IOException {
        if (reference == null) reference = LoadedModel.load(modelFile, 1, LoadProgress.NONE);
        return reference;
    }

    GenerationResult greedy(String prompt, int numPredict) throws IOException {
        return reference().generate(GenerationRequest.of(prompt, SamplingOptions.greedy().withNumPredict(numPredict)), p -> { });
    }

    /** Metric samples by their full name with labels, e.g. {@code forkpoint_x_total{model="m"}}. */
    Map<String, Double> metrics() throws IOException, InterruptedException {
        HttpResponse<String> r = get("/metrics");
        if (r.statusCode() != 200) throw new AssertionError("/metrics → " + r.statusCode());
        Map<String, Double> out = new HashMap<>();
        Pattern sample = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*(?:\\{[^}]*})?) (\\S+)");
        for (String line : r.body().split("\n")) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            Matcher m = sample.matcher(line);
            if (!m.matches()) throw new AssertionError("not a Prometheus sample line: " + line);
            out.put(m.group(1), Double.parseDouble(m.group(2)));
        }
        return out;
    }

    @Override
    public void close() {
        server.close();
        if (reference != null) reference.close();
    }
}
