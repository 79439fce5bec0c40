package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.TestData;
import dev.forkpoint.server.ollama.OllamaApi;
import dev.forkpoint.store.FakeOllamaStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Without --model: the Ollama store's models, loaded on first use and unloaded after keep_alive. */
class StoreModeTest {
    @TempDir
    Path dir;

    @Test
    void storeModelsLoadOnFirstUseAndUnloadAfterKeepAlive() throws Exception {
        byte[] gguf = Files.readAllBytes(TestData.shared("models/stories260K.gguf"));
        FakeOllamaStore store = FakeOllamaStore.create(dir.resolve("models"));
        Path blob = store.addModel("library", "stories", "260k", gguf);
        ServerConfig config = ServerConfig.defaults().withPort(0).withThreads(1)
                .withEnv(Map.of("OLLAMA_MODELS", store.root().toString(), "HOME", dir.toString()));
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi()))) {
            HttpClient http = HttpClient.newHttpClient();
            JsonNode tags = get(http, server, "/api/tags");
            assertEquals("stories:260k", tags.get("models").get(0).get("name").asText());
            assertEquals(blob.getFileName().toString().substring(7), tags.get("models").get(0).get("digest").asText());
            assertEquals(0, get(http, server, "/api/ps").get("models").size(), "nothing loaded before the first request");

            String body = "{\"model\":\"stories:260k\",\"prompt\":\"Once\",\"stream\":false,\"options\":{\"num_predict\":3},\"keep_alive\":%s}";
            JsonNode first = post(http, server, body.formatted("\"1h\""));
            assertTrue(first.get("load_duration").asLong() > 0, "the first request loaded the model");
            assertEquals(1, get(http, server, "/api/ps").get("models").size());
            JsonNode second = post(http, server, body.formatted("0"));
            assertEquals(0, second.get("load_duration").asLong(), "already loaded");
            assertEquals(0, get(http, server, "/api/ps").get("models").size(), "keep_alive 0 unloads after the request");

            var missing = http.send(HttpRequest.newBuilder(URI.create(server.address() + "/api/generate"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"llama3.2\",\"prompt\":\"x\"}")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(404, missing.statusCode());
            assertTrue(missing.body().contains("available: stories:260k"), missing.body());
        }
    }

    @Test
    void maxLoadedModelsUnloadsTheIdleModelUsedLeastRecently() throws Exception {
        byte[] gguf = Files.readAllBytes(TestData.shared("models/stories260K.gguf"));
        FakeOllamaStore store = FakeOllamaStore.create(dir.resolve("models"));
        store.addModel("library", "a", "latest", gguf);
        store.addModel("library", "b", "latest", gguf);
        store.addModel("library", "c", "latest", gguf);
        ServerConfig config = ServerConfig.defaults().withPort(0).withThreads(1).withMaxLoadedModels(2)
                .withEnv(Map.of("OLLAMA_MODELS", store.root().toString(), "HOME", dir.toString()));
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi()))) {
            HttpClient http = HttpClient.newHttpClient();
            String body = "{\"model\":\"%s\",\"prompt\":\"Once\",\"stream\":false,\"options\":{\"num_predict\":2},\"keep_alive\":-1}";
            post(http, server, body.formatted("a"));
            post(http, server, body.formatted("b"));
            post(http, server, body.formatted("a"));   // b is now the one used least recently
            post(http, server, body.formatted("c"));
            JsonNode ps = get(http, server, "/api/ps").get("models");
            assertEquals(2, ps.size(), ps.toString());
            assertEquals(List.of("a:latest", "c:latest"), List.of(ps.get(0).get("name").asText(), ps.get(1).get("name").asText()));
        }
    }

    private static JsonNode get(HttpClient http, ForkpointServer s, String path) throws Exception {
        return ServerHarness.JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(s.address() + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body());
    }

    private static JsonNode post(HttpClient http, ForkpointServer s, String body) throws Exception {
        var r = http.send(HttpRequest.newBuilder(URI.create(s.address() + "/api/generate")).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return ServerHarness.JSON.readTree(r.body());
    }
}
