package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.engine.EngineProbe;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.SchedulerStats;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.server.anthropic.AnthropicApi;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.server.openai.OpenAiApi;
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

/**
 * A live server on an ephemeral port serving one model (stories260K unless given), a plain HTTP client, and the engine
 * as the reference: the same file loaded separately.
 */
public final class ServerHarness implements AutoCloseable {
    public static final ObjectMapper JSON = new ObjectMapper();
    public static final String MODEL = "stories260K";

    final Path modelFile;
    public final ForkpointServer server;
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private LoadedModel reference;
    private EngineProbe probe;

    /** stories260K through the Ollama API and the runner protocol. */
    ServerHarness(ServerConfig base) {
        this(base, TestData.shared("models/stories260K.gguf"), List.of(new OllamaApi(), new RunnerApi()));
    }

    public ServerHarness(ServerConfig base, Path model, List<? extends ServerApi> apis) {
        modelFile = model;
        server = ForkpointServer.start(base.withModel(modelFile), apis);
    }

    /** stories260K (or {@code model}) through all four APIs: Ollama, the runner protocol, OpenAI, Anthropic. */
    public static ServerHarness allApis(ServerConfig base, Path model) {
        return new ServerHarness(base, model, List.of(new OllamaApi(), new RunnerApi(), new OpenAiApi(), new AnthropicApi()));
    }

    public static ServerHarness allApis(ServerConfig base) {
        return allApis(base, TestData.shared("models/stories260K.gguf"));
    }

    /** The model as the server serves it. */
    public ServedModel served() {
        return server.models().loaded().getFirst();
    }

    /** The served model's scheduler counts now. */
    public SchedulerStats stats() {
        return served().scheduler().stats();
    }

    /** The engine probe on the served model (installed on first use). */
    public synchronized EngineProbe probe() {
        if (probe == null) probe = EngineProbe.install(served().model());
        return probe;
    }

    public static ServerConfig config() {
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

    /** One server-sent event: its {@code event:} name (null when none) and its {@code data:}. */
    public record Sse(String event, String data) {
        public JsonNode json() {
            try {
                return JSON.readTree(data);
            } catch (IOException e) {
                throw new AssertionError("not JSON: " + data, e);
            }
        }
    }

    /** The events of an SSE response (status 200, content type text/event-stream), keep-alive comments skipped. */
    List<Sse> postSse(String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> r = post(path, body);
        if (r.statusCode() != 200) throw new AssertionError(path + " → " + r.statusCode() + ": " + r.body());
        if (!r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream")) {
            throw new AssertionError("content type " + r.headers().firstValue("Content-Type"));
        }
        return sse(r.body());
    }

    static List<Sse> sse(String text) {
        List<Sse> out = new ArrayList<>();
        for (String block : text.split("\n\n")) {
            String event = null;
            StringBuilder data = null;
            for (String line : block.split("\n")) {
                if (line.startsWith("event: ")) event = line.substring(7);
                else if (line.startsWith("data: ")) data = (data == null ? new StringBuilder() : data.append('\n')).append(line.substring(6));
                else if (!line.isEmpty() && !line.startsWith(":")) throw new AssertionError("not an SSE line: " + line);
            }
            if (data != null) out.add(new Sse(event, data.toString()));
        }
        return out;
    }

    /** The engine itself, loaded separately: what the server must reproduce. */
    synchronized LoadedModel reference() throws IOException {
        if (reference == null) reference = LoadedModel.load(modelFile, 1, LoadProgress.NONE);
        return reference;
    }

    /** A chat rendered by the model's own template (read from the file by the reference engine). */
    String render(List<dev.forkpoint.chat.ChatMessage> messages, List<dev.forkpoint.chat.ToolDefinition> tools) throws IOException {
        LoadedModel m = reference();
        return dev.forkpoint.chat.ChatTemplate.of(m.chatTemplateSource(), m.tokenizer()).render(messages, tools, true).prompt();
    }

    /** The prompt's tokens as the engine counts them (BOS included). */
    int[] tokens(String prompt) throws IOException {
        return reference().tokenizer().encode(prompt, true, true);
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
