package dev.forkpoint.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.TestData;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ChatTemplate;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.server.ForkpointServer;
import dev.forkpoint.server.Json;
import dev.forkpoint.server.ServerConfig;
import dev.forkpoint.server.anthropic.AnthropicApi;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * A live server on an ephemeral port serving stories260K through the OpenAI and Anthropic APIs, with an independent
 * reference: the same model loaded separately, run directly through {@link LoadedModel#generate}.
 */
public final class LiveServer implements AutoCloseable {
    public static final String MODEL = "stories260K";
    public static final long BODY_LIMIT = 64 * 1024;

    public final ForkpointServer server;
    public final LoadedModel reference;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private LiveServer(ForkpointServer server, LoadedModel reference) {
        this.server = server;
        this.reference = reference;
    }

    public static LiveServer start() throws IOException {
        return start(null);
    }

    public static LiveServer start(String apiKey) throws IOException {
        Path gguf = TestData.shared("models/stories260K.gguf");
        ServerConfig config = ServerConfig.defaults().withPort(0).withModel(gguf).withThreads(1).withEnv(Map.of())
                .withMaxBodyBytes(BODY_LIMIT).withApiKey(apiKey);
        ForkpointServer server = ForkpointServer.start(config, List.of(new OpenAiApi(), new AnthropicApi()));
        try {
            return new LiveServer(server, LoadedModel.load(gguf, 1, LoadProgress.NONE));
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
    }

    public String url() { return server.address(); }

    /** The rendered chat prompt, by the model's own template. */
    public String render(ChatMessage... messages) {
        return ChatTemplate.of(reference.chatTemplateSource(), reference.tokenizer()).render(List.of(messages), List.of(), true).prompt();
    }

    public int[] tokens(String prompt) {
        return reference.tokenizer().encode(prompt, true, true);
    }

    /** Greedy generation of {@code n} tokens at most, straight on the engine. */
    public GenerationResult greedy(String prompt, int n, String... stops) {
        return reference.generate(GenerationRequest.of(prompt, SamplingOptions.greedy().withNumPredict(n).withStop(List.of(stops))), piece -> {});
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

    public HttpResponse<String> post(String path, String body, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url() + path)).POST(HttpRequest.BodyPublishers.ofString(body))
                .header("Content-Type", "application/json");
        for (int i = 0; i < headers.length; i += 2) b.header(headers[i], headers[i + 1]);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    public HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(url() + path)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    public static JsonNode json(String text) {
        try {
            return Json.MAPPER.readTree(text);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } finally {
            reference.close();
        }
    }
}
