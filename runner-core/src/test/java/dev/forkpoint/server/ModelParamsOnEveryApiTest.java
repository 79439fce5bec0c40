package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.server.anthropic.AnthropicApi;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.server.openai.OpenAiApi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A store model's PARAMETER lines apply on every API, under the request's own fields, and every API's context check is
 * the engine's one, worded the same. The model (stories260K, created with /api/create) says temperature 0,
 * num_predict 5 and num_ctx 64; the Ollama route (whose use of the params is tested in {@link ModelManagementTest}) is
 * the reference the OpenAI and Anthropic routes are compared with: the same chat renders the same prompt, so greedy
 * decoding gives the same text.
 */
class ModelParamsOnEveryApiTest {
    private static final ObjectMapper PLAIN = new ObjectMapper();
    private static final String MESSAGES = "[{\"role\":\"user\",\"content\":\"there was a\"}]";

    @TempDir
    Path dir;

    @Test
    void theModelsParametersLieUnderTheRequestsFieldsOnOpenAiAndAnthropic() throws Exception {
        Path gguf = TestData.shared("models/stories260K.gguf");
        ServerConfig config = ServerConfig.defaults().withPort(0).withThreads(1)
                .withEnv(Map.of("OLLAMA_MODELS", dir.resolve("models").toString(), "HOME", dir.toString()));
        String modelfile = "FROM " + gguf.toAbsolutePath() + "\nPARAMETER temperature 0\nPARAMETER num_predict 5\nPARAMETER num_ctx 64\n";
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi(), new OpenAiApi(), new AnthropicApi()))) {
            HttpClient http = HttpClient.newHttpClient();
            var created = post(http, server, "/api/create", PLAIN.writeValueAsString(Map.of("model", "tales:p", "modelfile", modelfile, "stream", false)));
            assertEquals(200, created.statusCode(), created.body());

            JsonNode ollama = ok(post(http, server, "/api/chat", "{\"model\":\"tales:p\",\"stream\":false,\"messages\":" + MESSAGES + "}"));
            assertEquals(5, ollama.get("eval_count").asInt(), ollama.toString());
            String greedy = ollama.get("message").get("content").asText();

            // OpenAI: no temperature, no max_tokens: the model's greedy 5 tokens (OpenAI's defaults would sample at 1)
            for (int i = 0; i < 2; i++) {
                JsonNode chat = ok(post(http, server, "/v1/chat/completions", "{\"model\":\"tales:p\",\"messages\":" + MESSAGES + "}"));
                assertEquals(5, chat.get("usage").get("completion_tokens").asInt(), chat.toString());
                assertEquals(greedy, chat.get("choices").get(0).get("message").get("content").asText());
            }
            JsonNode shorter = ok(post(http, server, "/v1/chat/completions", "{\"model\":\"tales:p\",\"max_tokens\":3,\"messages\":" + MESSAGES + "}"));
            assertEquals(3, shorter.get("usage").get("completion_tokens").asInt(), "the request's max_tokens wins");
            JsonNode completion = ok(post(http, server, "/v1/completions", "{\"model\":\"tales:p\",\"prompt\":\"Once upon a time\"}"));
            assertEquals(5, completion.get("usage").get("completion_tokens").asInt(), "num_predict 5, not OpenAI's default 16: " + completion);

            // Anthropic: max_tokens is required (it wins); no temperature: the model's greedy decoding
            JsonNode message = ok(post(http, server, "/v1/messages", "{\"model\":\"tales:p\",\"max_tokens\":5,\"messages\":" + MESSAGES + "}"));
            assertEquals(5, message.get("usage").get("output_tokens").asInt(), message.toString());
            assertEquals(greedy, message.get("content").get(0).get("text").asText());

            // num_ctx 64 from the params, and one context check worded the same on every API
            var ollamaLong = post(http, server, "/api/chat", "{\"model\":\"tales:p\",\"stream\":false,\"options\":{\"num_predict\":100},\"messages\":" + MESSAGES + "}");
            var openAiLong = post(http, server, "/v1/chat/completions", "{\"model\":\"tales:p\",\"max_tokens\":100,\"messages\":" + MESSAGES + "}");
            var anthropicLong = post(http, server, "/v1/messages", "{\"model\":\"tales:p\",\"max_tokens\":100,\"messages\":" + MESSAGES + "}");
            for (var r : List.of(ollamaLong, openAiLong, anthropicLong)) assertEquals(400, r.statusCode(), r.body());
            String ollamaError = PLAIN.readTree(ollamaLong.body()).get("error").asText();
            int promptTokens = ollama.get("prompt_eval_count").asInt() + ollama.get("prompt_cache_count").asInt();
            assertEquals("prompt (" + promptTokens + " tokens) + num_predict (100) exceeds num_ctx 64", ollamaError);
            JsonNode openAiError = PLAIN.readTree(openAiLong.body()).get("error");
            assertEquals(ollamaError.replace("num_predict", "max_tokens"), openAiError.get("message").asText());
            assertEquals("max_tokens", openAiError.get("param").asText());
            assertEquals("context_length_exceeded", openAiError.get("code").asText());
            assertEquals(ollamaError.replace("num_predict", "max_tokens"), PLAIN.readTree(anthropicLong.body()).get("error").get("message").asText());
        }
    }

    private static HttpResponse<String> post(HttpClient http, ForkpointServer s, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(s.address() + path)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode ok(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        return PLAIN.readTree(r.body());
    }
}
