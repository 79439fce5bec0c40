package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ChatTemplate;
import dev.forkpoint.chat.ToolDefinition;
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
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;

/**
 * A live server on an ephemeral port serving one model (stories260K unless given), a plain HTTP/1.1 client, and the
 * engine as the independent reference: the same file loaded separately, run directly through
 * {@link LoadedModel#generate}. The tests of every API share it.
 */
public final class ServerHarness implements AutoCloseable {
    public static final ObjectMapper JSON = new ObjectMapper();
    public static final String MODEL = "stories260K";
    public static final long BODY_LIMIT = 64 * 1024;

    final Path modelFile;
    public final ForkpointServer server;
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
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

    /** stories260K through the OpenAI and Anthropic APIs, bodies up to {@link #BODY_LIMIT}, the API key if not null. */
    public static ServerHarness openAiAndAnthropic(String apiKey) {
        return new ServerHarness(config().withMaxBodyBytes(BODY_LIMIT).withApiKey(apiKey),
                TestData.shared("models/stories260K.gguf"), List.of(new OpenAiApi(), new AnthropicApi()));
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

    /** {@code http://host:port}. */
    public String url() { return server.address(); }

    public String url(String path) { return server.address() + path; }

    public HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(url(path))).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** POSTs JSON; {@code headers} are name, value pairs. */
    public HttpResponse<String> post(String path, String body, String... headers) throws IOException, InterruptedException {
        var b = HttpRequest.newBuilder(URI.create(url(path))).POST(HttpRequest.BodyPublishers.ofString(body))
                .header("Content-Type", "application/json");
        if (headers.length > 0) b.headers(headers);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    public JsonNode postJson(String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> r = post(path, body);
        if (r.statusCode() != 200) throw new AssertionError(path + " → " + r.statusCode() + ": " + r.body());
        return JSON.readTree(r.body());
    }

    /** The NDJSON lines of a streamed response. */
    public List<JsonNode> postLines(String path, String body) throws IOException, InterruptedException {
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
    public List<Sse> postSse(String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> r = post(path, body);
        if (r.statusCode() != 200) throw new AssertionError(path + " → " + r.statusCode() + ": " + r.body());
        if (!r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream")) {
            throw new AssertionError("content type " + r.headers().firstValue("Content-Type"));
        }
        return sse(r.body());
    }

    public static List<Sse> sse(String text) {
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

    /** Parses JSON text (an AssertionError naming it when it is not JSON). */
    public static JsonNode json(String text) {
        try {
            return JSON.readTree(text);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    /** The engine itself, loaded separately: what the server must reproduce. */
    public synchronized LoadedModel reference() {
        if (reference == null) {
            try {
                reference = LoadedModel.load(modelFile, 1, LoadProgress.NONE);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return reference;
    }

    /** A chat rendered by the model's own template (read from the file by the reference engine). */
    public String render(List<ChatMessage> messages, List<ToolDefinition> tools) {
        LoadedModel m = reference();
        return ChatTemplate.of(m.chatTemplateSource(), m.tokenizer()).render(messages, tools, true).prompt();
    }

    public String render(ChatMessage... messages) {
        return render(List.of(messages), List.of());
    }

    /** The prompt's tokens as the engine counts them (BOS included). */
    public int[] tokens(String prompt) {
        return reference().tokenizer().encode(prompt, true, true);
    }

    /** Greedy generation of {@code numPredict} tokens at most, straight on the engine. */
    public GenerationResult greedy(String prompt, int numPredict, String... stops) {
        return reference().generate(GenerationRequest.of(prompt, SamplingOptions.greedy().withNumPredict(numPredict)
                .withStop(List.of(stops))), p -> { });
    }

    /**
     * The prompt tokens turn 2 can reuse after turn 1: the common prefix of what turn 1 left in the cache (its prompt and
     * generated tokens, less the last one when it ended by length: that one was sampled, never evaluated) and turn 2's
     * prompt, at most all but its last token.
     */
    public int expectedReuse(String prompt1, GenerationResult turn1, String prompt2) {
        int[] p1 = tokens(prompt1), gen = turn1.generatedIds(), p2 = tokens(prompt2);
        int committed = p1.length + gen.length - (turn1.doneReason().equals("length") ? 1 : 0);
        int[] cached = Arrays.copyOf(p1, p1.length + gen.length);
        System.arraycopy(gen, 0, cached, p1.length, gen.length);
        int common = 0;
        while (common < committed && common < p2.length && cached[common] == p2[common]) common++;
        return Math.min(common, p2.length - 1);
    }

    /** Metric samples by their full name with labels, e.g. {@code forkpoint_x_total{model="m"}}. */
    public Map<String, Double> metrics() throws IOException, InterruptedException {
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

    /** Streams {@code request} through a langchain4j streaming chat model: appends each piece to {@code pieces}, returns the final response. */
    public static ChatResponse stream(StreamingChatModel model, ChatRequest request, List<String> pieces) throws Exception {
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        model.chat(request, new StreamingChatResponseHandler() {
            public void onPartialResponse(String piece) { pieces.add(piece); }

            public void onCompleteResponse(ChatResponse response) { done.complete(response); }

            public void onError(Throwable error) { done.completeExceptionally(error); }
        });
        return done.get(60, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        server.close();
        if (reference != null) reference.close();
    }
}
