package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.server.ollama.OllamaApi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** /api/create, /api/copy, /api/delete on a temporary store, checked against a plain reading of the files. */
class ModelManagementTest {
    private static final ObjectMapper PLAIN = new ObjectMapper();

    @TempDir
    Path dir;

    @Test
    void createCopyDeleteWriteOllamasLayoutAndServeTheCreatedModel() throws Exception {
        Path gguf = TestData.shared("models/stories260K.gguf");
        Path store = dir.resolve("models");
        ServerConfig config = ServerConfig.defaults().withPort(0).withThreads(1)
                .withEnv(Map.of("OLLAMA_MODELS", store.toString(), "HOME", dir.toString()));
        String modelfile = "# a story teller\nFROM " + gguf.toAbsolutePath() + "\nPARAMETER temperature 0\nPARAMETER num_predict 6\n"
                + "PARAMETER stop \"<end>\"\nparameter stop ###\nSYSTEM Once upon a time\nTEMPLATE \"\"\"{{ if .System }}{{ .System }}, {{ end }}{{ .Prompt }}\"\"\"\n";
        String expected;
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi()))) {
            HttpClient http = HttpClient.newHttpClient();
            var created = send(http, server, "POST", "/api/create", PLAIN.writeValueAsString(Map.of("model", "stories:test", "modelfile", modelfile)));
            assertEquals(200, created.statusCode(), created.body());
            List<String> lines = created.body().lines().toList();
            assertEquals("{\"status\":\"success\"}", lines.getLast());
            assertTrue(lines.size() > 2, created.body());

            // the layout, read with plain Jackson and sha256 recomputed
            Path manifest = store.resolve("manifests/registry.ollama.ai/library/stories/test");
            JsonNode m = PLAIN.readTree(manifest.toFile());
            assertEquals(2, m.get("schemaVersion").asInt());
            assertEquals("application/vnd.docker.distribution.manifest.v2+json", m.get("mediaType").asText());
            assertEquals("application/vnd.docker.container.image.v1+json", m.get("config").get("mediaType").asText());
            checkBlob(store, m.get("config"));
            JsonNode cfg = PLAIN.readTree(blob(store, m.get("config")).toFile());
            assertEquals("gguf", cfg.get("model_format").asText());
            assertEquals("llama", cfg.get("model_family").asText());
            assertEquals("layers", cfg.get("rootfs").get("type").asText());
            Map<String, JsonNode> byType = new java.util.HashMap<>();
            for (JsonNode l : m.get("layers")) {
                checkBlob(store, l);
                byType.put(l.get("mediaType").asText(), l);
            }
            assertEquals(Files.size(gguf), byType.get("application/vnd.ollama.image.model").get("size").asLong());
            assertEquals(sha256(Files.readAllBytes(gguf)), byType.get("application/vnd.ollama.image.model").get("digest").asText());
            assertEquals("Once upon a time", Files.readString(blob(store, byType.get("application/vnd.ollama.image.system"))));
            assertEquals("{{ if .System }}{{ .System }}, {{ end }}{{ .Prompt }}", Files.readString(blob(store, byType.get("application/vnd.ollama.image.template"))));
            JsonNode params = PLAIN.readTree(blob(store, byType.get("application/vnd.ollama.image.params")).toFile());
            assertEquals("{\"num_predict\":6,\"stop\":[\"<end>\",\"###\"],\"temperature\":0}", PLAIN.writeValueAsString(params));
            assertTrue(params.get("num_predict").isIntegralNumber());

            assertTrue(get(http, server, "/api/tags").toString().contains("\"stories:test\""));
            // served: SYSTEM and TEMPLATE make the prompt, PARAMETERs the sampling (greedy, 6 tokens)
            JsonNode gen = json(send(http, server, "POST", "/api/generate", "{\"model\":\"stories:test\",\"prompt\":\"there was\",\"stream\":false}"));
            assertEquals(6, gen.get("eval_count").asInt(), gen.toString());
            JsonNode raw = json(send(http, server, "POST", "/api/generate", "{\"model\":\"stories:test\",\"prompt\":\"Once upon a time, there was\","
                    + "\"raw\":true,\"stream\":false}"));
            assertEquals(raw.get("response").asText(), gen.get("response").asText());
            JsonNode longer = json(send(http, server, "POST", "/api/generate", "{\"model\":\"stories:test\",\"prompt\":\"there was\",\"stream\":false,"
                    + "\"options\":{\"num_predict\":9}}"));
            assertEquals(9, longer.get("eval_count").asInt(), "a request's options override the model's PARAMETERs");
            expected = gen.get("response").asText();
            JsonNode show = json(send(http, server, "POST", "/api/show", "{\"model\":\"stories:test\"}"));
            assertEquals("Once upon a time", show.get("system").asText());
            assertEquals("{{ if .System }}{{ .System }}, {{ end }}{{ .Prompt }}", show.get("template").asText());
            assertTrue(show.get("parameters").asText().contains("stop                           \"###\""), show.get("parameters").asText());
            assertTrue(show.get("modelfile").asText().contains("PARAMETER temperature 0\n"), show.get("modelfile").asText());
        }
        // after a restart: listed and served the same
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi()))) {
            HttpClient http = HttpClient.newHttpClient();
            assertTrue(get(http, server, "/api/tags").toString().contains("\"stories:test\""));
            JsonNode gen = json(send(http, server, "POST", "/api/generate", "{\"model\":\"stories:test\",\"prompt\":\"there was\",\"stream\":false}"));
            assertEquals(expected, gen.get("response").asText());

            assertEquals(200, send(http, server, "POST", "/api/copy", "{\"source\":\"stories:test\",\"destination\":\"me/tales:v1\"}").statusCode());
            ModelLease inUse = server.models().acquire("stories:test", null);   // a request still running on it
            assertEquals(200, send(http, server, "DELETE", "/api/delete", "{\"model\":\"stories:test\"}").statusCode());
            assertEquals(1, get(http, server, "/api/ps").get("models").size(), "a model in use stays loaded until its request ends");
            inUse.close();
            assertEquals(0, get(http, server, "/api/ps").get("models").size(), "then it is unloaded");
            assertFalse(Files.exists(store.resolve("manifests/registry.ollama.ai/library")), "empty manifest folders are removed");
            Path modelBlob = store.resolve("blobs/" + sha256(Files.readAllBytes(gguf)).replace(':', '-'));
            assertTrue(Files.isRegularFile(modelBlob), "the copy still uses the blob");
            assertEquals(404, send(http, server, "POST", "/api/generate", "{\"model\":\"stories:test\",\"prompt\":\"x\",\"stream\":false}").statusCode());
            JsonNode copy = json(send(http, server, "POST", "/api/generate", "{\"model\":\"me/tales:v1\",\"prompt\":\"there was\",\"stream\":false}"));
            assertEquals(expected, copy.get("response").asText());

            assertEquals(200, send(http, server, "DELETE", "/api/delete", "{\"model\":\"me/tales:v1\"}").statusCode());
            assertFalse(Files.exists(modelBlob), "the last reference deleted removes the blob");
            try (Stream<Path> s = Files.list(store.resolve("blobs"))) {
                assertEquals(List.of(), s.toList(), "every blob of the deleted model is pruned");
            }
            assertEquals(404, send(http, server, "DELETE", "/api/delete", "{\"model\":\"me/tales:v1\"}").statusCode());
        }
    }

    @Test
    void badInputIsA400NamingTheFieldAndLeavesTheStoreUnchanged() throws Exception {
        Path gguf = TestData.shared("models/stories260K.gguf");
        Path store = dir.resolve("models");
        ServerConfig config = ServerConfig.defaults().withPort(0).withThreads(1)
                .withEnv(Map.of("OLLAMA_MODELS", store.toString(), "HOME", dir.toString()));
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi()))) {
            HttpClient http = HttpClient.newHttpClient();
            var ok = send(http, server, "POST", "/api/create", PLAIN.writeValueAsString(Map.of("model", "base", "from", gguf.toString(), "stream", false)));
            assertEquals(200, ok.statusCode(), ok.body());
            assertEquals("{\"status\":\"success\"}", ok.body());
            List<String> before = listing(store);
            String[][] cases = {
                    {"{\"model\":\"x\",\"modelfile\":\"FROM /no/such/file.gguf\"}", "does not exist"},
                    {"{\"model\":\"x\",\"modelfile\":\"FROM base\\nADAPTER lora.gguf\"}", "ADAPTER"},
                    {"{\"model\":\"x\",\"modelfile\":\"FROM base\\nFOO bar\"}", "FOO"},
                    {"{\"model\":\"x\",\"modelfile\":\"FROM base\\nPARAMETER temperature hot\"}", "temperature"},
                    {"{\"model\":\"x\",\"from\":\"base\",\"parameters\":{\"top_k\":1.5}}", "top_k"},
                    {"{\"model\":\"x\",\"from\":\"base\",\"parameters\":{\"temperature\":-1}}", "temperature"},
                    {"{\"model\":\"x\",\"from\":\"base\",\"parameters\":{\"colour\":1}}", "colour"},
                    {"{\"model\":\"a/b/c/d\",\"from\":\"base\"}", "model"},
                    {"{\"model\":\"x\",\"from\":\"base\",\"template\":\"{{ range .Messages }}{{ end }}\"}", "template"},
                    {"{\"model\":\"x\",\"from\":\"base\",\"quantize\":\"q4_K_M\"}", "quantize"},
                    {"{\"model\":\"x\",\"from\":\"nosuchmodel\"}", "nosuchmodel"},
            };
            for (String[] c : cases) {
                var r = send(http, server, "POST", "/api/create", c[0]);
                assertEquals(400, r.statusCode(), c[0] + " → " + r.body());
                assertTrue(r.body().contains(c[1]), c[0] + " → " + r.body());
                assertEquals(before, listing(store), c[0] + " left the store unchanged");
            }
            var pull = send(http, server, "POST", "/api/pull", "{\"model\":\"llama3.2\"}");
            assertEquals(502, pull.statusCode());
            assertTrue(pull.body().contains("registry.ollama.ai"), pull.body());
            var copy = send(http, server, "POST", "/api/copy", "{\"source\":\"base\",\"destination\":\"../x\"}");
            assertEquals(400, copy.statusCode(), copy.body());
            assertEquals(before, listing(store));

            // replacing a model removes the blobs only the replaced one used
            for (String system : List.of("first", "second")) {
                var r = send(http, server, "POST", "/api/create", PLAIN.writeValueAsString(Map.of("model", "base", "from", gguf.toString(),
                        "system", system, "stream", false)));
                assertEquals(200, r.statusCode(), r.body());
            }
            Path first = store.resolve("blobs").resolve(sha256("first".getBytes()).replace(':', '-'));
            assertFalse(Files.exists(first), "the replaced SYSTEM layer is pruned");
            assertTrue(Files.exists(store.resolve("blobs").resolve(sha256("second".getBytes()).replace(':', '-'))));
        }
    }

    @Test
    void blobUploadsStreamToDiskBeyondTheRequestBodyLimit() throws Exception {
        Path store = dir.resolve("models");
        ServerConfig config = ServerConfig.defaults().withPort(0).withThreads(1)
                .withEnv(Map.of("OLLAMA_MODELS", store.toString(), "HOME", dir.toString()));
        byte[] big = new byte[(int) ServerConfig.DEFAULT_MAX_BODY_BYTES + (1 << 20)];
        for (int i = 0; i < big.length; i += 4096) big[i] = (byte) (i >> 12);
        String digest = sha256(big);
        try (ForkpointServer server = ForkpointServer.start(config, List.of(new OllamaApi()))) {
            HttpClient http = HttpClient.newHttpClient();
            var head = http.send(HttpRequest.newBuilder(URI.create(server.address() + "/api/blobs/" + digest))
                    .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding());
            assertEquals(404, head.statusCode());
            var r = http.send(HttpRequest.newBuilder(URI.create(server.address() + "/api/blobs/" + digest))
                    .POST(HttpRequest.BodyPublishers.ofByteArray(big)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(201, r.statusCode(), r.body());
            assertEquals(digest, sha256(Files.readAllBytes(store.resolve("blobs").resolve(digest.replace(':', '-')))));
            var notGguf = send(http, server, "POST", "/api/create", "{\"model\":\"x\",\"files\":{\"x.gguf\":\"" + digest + "\"}}");
            assertEquals(400, notGguf.statusCode(), notGguf.body());
            assertTrue(notGguf.body().contains("not a GGUF file"), notGguf.body());
            try (Stream<Path> s = Files.list(store.resolve("blobs"))) {
                assertEquals(1, s.count(), "no temporary file is left");
            }
        }
    }

    private static List<String> listing(Path store) throws Exception {
        try (Stream<Path> s = Files.walk(store)) {
            return s.map(p -> store.relativize(p).toString()).sorted().toList();
        }
    }

    private static Path blob(Path store, JsonNode layer) {
        return store.resolve("blobs").resolve(layer.get("digest").asText().replace(':', '-'));
    }

    private static void checkBlob(Path store, JsonNode layer) throws Exception {
        byte[] content = Files.readAllBytes(blob(store, layer));
        assertEquals(layer.get("size").asLong(), content.length, layer.toString());
        assertEquals(layer.get("digest").asText(), sha256(content));
    }

    private static String sha256(byte[] content) throws Exception {
        return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
    }

    private static HttpResponse<String> send(HttpClient http, ForkpointServer s, String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(s.address() + path)).method(method, HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode json(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        return PLAIN.readTree(r.body());
    }

    private static JsonNode get(HttpClient http, ForkpointServer s, String path) throws Exception {
        return PLAIN.readTree(http.send(HttpRequest.newBuilder(URI.create(s.address() + path)).build(), HttpResponse.BodyHandlers.ofString()).body());
    }
}
