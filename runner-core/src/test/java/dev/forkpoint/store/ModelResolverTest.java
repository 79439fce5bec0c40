package dev.forkpoint.store;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ModelResolverTest {
    @TempDir
    Path tmp;

    private FakeOllamaStore store() throws IOException { return FakeOllamaStore.create(tmp.resolve("models")); }

    private ModelResolver resolver() { return new ModelResolver(tmp.resolve("models")); }

    private static String message(Runnable r) {
        return assertThrows(InvalidInputException.class, r::run).getMessage();
    }

    @Test
    void resolvesEveryFormOfAStoredName() throws IOException {
        byte[] gguf = Files.readAllBytes(TestData.shared("models/stories260K.gguf"));
        Path blob = store().addModel("library", "stories", "latest", gguf);
        for (String name : List.of("stories", "stories:latest", "library/stories", "library/stories:latest",
                "registry.ollama.ai/library/stories:latest", "Stories:Latest")) {
            Path p = resolver().resolve(name);
            assertEquals(blob, p, name);
        }
        assertArrayEquals(gguf, Files.readAllBytes(blob));
        assertTrue(blob.getFileName().toString().matches("sha256-[0-9a-f]{64}"));
    }

    @Test
    void resolvesNamespacesAndHostsWithPorts() throws IOException {
        var s = store();
        Path user = s.addModel("someone", "thing", "v1", new byte[] {1});
        Path hosted = s.addModel("localhost:5000", "team", "model", "q8", new byte[] {2});
        assertEquals(user, resolver().resolve("someone/thing:v1"));
        assertEquals(hosted, resolver().resolve("localhost:5000/team/model:q8"));
        assertEquals(List.of("localhost:5000/team/model:q8", "someone/thing:v1"), resolver().available());
    }

    @Test
    void unknownNameListsWhatIsThere() throws IOException {
        var s = store();
        s.addModel("library", "qwen3", "0.6b", new byte[] {1});
        s.addModel("library", "llama3.2", "latest", new byte[] {2});
        String m = message(() -> resolver().resolve("qwen3:8b"));
        assertTrue(m.contains("qwen3:8b") && m.contains("qwen3:0.6b") && m.contains("llama3.2:latest")
                && m.contains(tmp.resolve("models").toString()), m);
    }

    @Test
    void emptyAndAbsentStoresSaySo() throws IOException {
        String absent = message(() -> resolver().resolve("qwen3:0.6b"));
        assertTrue(absent.contains("no Ollama store at " + tmp.resolve("models")) && absent.contains("OLLAMA_MODELS"), absent);
        store();
        String empty = message(() -> resolver().resolve("qwen3:0.6b"));
        assertTrue(empty.contains("has no models") && empty.contains(tmp.resolve("models").toString()), empty);
    }

    @Test
    void safetensorsModelsResolveToTheirManifest() throws IOException {
        var s = store();
        String a = s.addBlob(new byte[] {1, 2});
        String b = s.addBlob(new byte[] {3});
        s.addManifest("registry.ollama.ai", "library", "qwen3.5", "mlx", """
                {"schemaVersion":2,"layers":[
                 {"mediaType":"application/vnd.ollama.image.tensor","digest":"%s","size":2,"name":"model.embed.weight"},
                 {"mediaType":"application/vnd.ollama.image.tensor","digest":"%s","size":1,"name":"lm_head.weight"}]}
                """.formatted(a, b));
        assertEquals(tmp.resolve("models/manifests/registry.ollama.ai/library/qwen3.5/mlx"), resolver().resolve("qwen3.5:mlx"));
    }

    @Test
    void brokenManifestsAreNamed() throws IOException {
        var s = store();
        Path bad = s.addManifest("registry.ollama.ai", "library", "broken", "latest", "{\"layers\": [");
        String m = message(() -> resolver().resolve("broken"));
        assertTrue(m.contains(bad.toString()) && m.contains("JSON"), m);
        s.addManifest("registry.ollama.ai", "library", "nolayers", "latest", "{\"schemaVersion\":2}");
        assertTrue(message(() -> resolver().resolve("nolayers")).contains("layers"));
        s.addManifest("registry.ollama.ai", "library", "evil", "latest",
                "{\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":\"sha256:../../../etc/passwd\"}]}");
        assertTrue(message(() -> resolver().resolve("evil")).contains("digest"));
    }

    @Test
    void missingOrTruncatedBlobsSayToPullAgain() throws IOException {
        var s = store();
        Path blob = s.addModel("library", "gone", "latest", new byte[] {1, 2, 3});
        Path blob2 = s.addModel("library", "short", "latest", new byte[] {4, 5, 6});
        Files.delete(blob);
        String m = message(() -> resolver().resolve("gone"));
        assertTrue(m.contains("ollama pull gone:latest") && m.contains(blob.toString()), m);
        Files.write(blob2, new byte[] {4});
        String t = message(() -> resolver().resolve("short"));
        assertTrue(t.contains("1 bytes") && t.contains("3"), t);
    }

    @Test
    void pathsAreFilesNotNames() throws IOException {
        Path file = tmp.resolve("my model.gguf");
        Files.write(file, new byte[] {1});
        assertEquals(file, resolver().resolve(file.toString()));
        assertTrue(message(() -> resolver().resolve("/nonexistent.gguf")).contains("/nonexistent.gguf"));
        assertTrue(message(() -> resolver().resolve("relative/missing.gguf")).contains("relative/missing.gguf does not exist"));
        assertTrue(message(() -> resolver().resolve(tmp.toString())).contains("has no config.json"));
    }

    @Test
    void malformedNamesAreRefused() {
        for (String name : List.of("a/b/c/d", "../etc:passwd", "name:", "na me", ":tag")) {
            String m = message(() -> resolver().resolve(name));
            assertTrue(m.contains(name), m);
        }
    }

    @Test
    void storeComesFromOllamaModelsOrHome() {
        assertEquals(Path.of("/srv/ollama"), ModelResolver.fromEnvironment(Map.of("OLLAMA_MODELS", "/srv/ollama")).store());
        assertEquals(Path.of("/home/u/.ollama/models"), ModelResolver.fromEnvironment(Map.of("HOME", "/home/u")).store());
    }

    @Test
    void namesRoundTripThroughDisplayNames() {
        assertEquals(new OllamaName("registry.ollama.ai", "library", "qwen3", "0.6b"), OllamaName.parse("qwen3:0.6b"));
        assertEquals(new OllamaName("registry.ollama.ai", "library", "llama3.2", "latest"), OllamaName.parse("llama3.2"));
        for (String n : List.of("qwen3:0.6b", "user/model:q4", "example.com:8080/ns/m:t")) {
            assertEquals(n, OllamaName.parse(n).displayName());
        }
    }

    @Test
    void huggingFaceCacheSnapshotsResolveByRepositoryAndFolder() throws IOException {
        Path hub = tmp.resolve("hub");
        Path repo = hub.resolve("models--mlx-community--Tiny-4bit");
        Path old = Files.createDirectories(repo.resolve("snapshots/1111111"));
        Path main = Files.createDirectories(repo.resolve("snapshots/abcdef0"));
        Files.writeString(old.resolve("config.json"), "{}");
        Files.writeString(main.resolve("config.json"), "{}");
        Files.createDirectories(repo.resolve("refs"));
        Files.writeString(repo.resolve("refs/main"), "abcdef0\n");
        var r = new ModelResolver(tmp.resolve("models"), hub);
        assertEquals(main, r.resolve("mlx-community/Tiny-4bit"));
        assertEquals(main, r.resolve(repo.toString()));
        assertEquals(old, r.resolve(old.toString()));
        String missing = message(() -> r.resolve("mlx-community/Other"));
        assertTrue(missing.contains("mlx-community/Other"), missing);
    }
}
