package dev.forkpoint.reference;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.store.FakeOllamaStore;
import dev.forkpoint.store.ModelResolver;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The same MLX model reached three ways — an mlx-community folder, Ollama's safetensors store (one blob per tensor in
 * Ollama's combined layout {@code name}, {@code name.scale}, {@code name.bias} with {@code quant_type} metadata, and
 * named JSON blobs) and a Hugging Face cache snapshot (links into {@code blobs/}) — resolves and generates the same
 * greedy tokens.
 */
class MlxModelSourcesTest {
    @TempDir static Path dir;
    private static Path folder;
    private static int[] expected;

    @BeforeAll
    static void convert() throws IOException {
        folder = dir.resolve("stories-8bit");
        ModelConverter.toMlx(StoriesReference.model(), folder, MlxOptions.defaults().withFormat(8, 64), (a, b) -> {});
        expected = greedy(folder);
    }

    private static int[] greedy(Path model) throws IOException {
        try (LoadedModel m = LoadedModel.load(model, 2, LoadProgress.NONE)) {
            return m.generate(GenerationRequest.of("Once upon a time", SamplingOptions.greedy().withNumPredict(24)), s -> {}).generatedIds();
        }
    }

    /** The folder's model as Ollama stores a safetensors model: one blob per tensor, JSON blobs, a manifest. */
    private static ArrayNode addOllamaModel(FakeOllamaStore store, String tag, String quantType) throws IOException {
        ObjectMapper json = new ObjectMapper();
        ObjectNode manifest = json.createObjectNode().put("schemaVersion", 2);
        ArrayNode layers = manifest.putArray("layers");
        Path scratch = Files.createDirectories(dir.resolve("blob-scratch"));
        try (SafetensorsShards shards = SafetensorsShards.open(folder)) {
            for (SafetensorsTensor t : shards.tensors()) {
                String n = t.name();
                if (n.endsWith(".scales") || n.endsWith(".biases")) continue;
                SafetensorsWriter w = new SafetensorsWriter().tensor(n, t.dtype(), t.shape(), t.data());
                String module = n.substring(0, n.length() - ".weight".length());
                var scales = shards.find(module + ".scales");
                if (scales.isPresent()) {
                    SafetensorsTensor b = shards.tensor(module + ".biases");
                    w.metadata("quant_type", quantType).metadata("group_size", "64")
                            .tensor(n + ".scale", scales.get().dtype(), scales.get().shape(), scales.get().data())
                            .tensor(n + ".bias", b.dtype(), b.shape(), b.data());
                }
                Path file = scratch.resolve("blob.safetensors");
                w.write(file);
                byte[] bytes = Files.readAllBytes(file);
                layers.addObject().put("mediaType", "application/vnd.ollama.image.tensor").put("digest", store.addBlob(bytes))
                        .put("size", bytes.length).put("name", n);
            }
        }
        for (String name : List.of("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json")) {
            byte[] bytes = Files.readAllBytes(folder.resolve(name));
            layers.addObject().put("mediaType", "application/vnd.ollama.image.json").put("digest", store.addBlob(bytes))
                    .put("size", bytes.length).put("name", name);
        }
        store.addManifest("registry.ollama.ai", "library", "stories", tag, json.writeValueAsString(manifest));
        return layers;
    }

    @Test
    void ollamaSafetensorsManifestLoadsLikeTheFolder() throws IOException {
        FakeOllamaStore store = FakeOllamaStore.create(dir.resolve("ollama"));
        ArrayNode layers = addOllamaModel(store, "mlx", "int8");
        Path resolved = new ModelResolver(store.root()).resolve("stories:mlx");
        assertArrayEquals(expected, greedy(resolved));

        try (LoadedModel m = LoadedModel.load(resolved, 1, LoadProgress.NONE)) {
            assertTrue(m.info().tensorTypes().keySet().stream().anyMatch(t -> t.startsWith("affine 8-bit")), m.info().tensorTypes().toString());
            assertEquals("stories:mlx", m.info().name());
        }

        // A tensor blob that goes missing is named.
        String someDigest = layers.get(0).get("digest").asText();
        Files.delete(store.blob(someDigest));
        var e = assertThrows(dev.forkpoint.InvalidInputException.class, () -> LoadedModel.load(resolved, 1, LoadProgress.NONE).close());
        assertTrue(e.getMessage().contains(layers.get(0).get("name").asText()) && e.getMessage().contains("missing"), e.getMessage());
    }

    @Test
    void ollamaQuantTypeAliasesAreReadAsOllamasRunnerReadsThem() throws IOException {
        FakeOllamaStore store = FakeOllamaStore.create(dir.resolve("ollama-q8"));
        addOllamaModel(store, "q8", "Q8");   // Q8 and FP8 are int8, in any case
        assertArrayEquals(expected, greedy(new ModelResolver(store.root()).resolve("stories:q8")));
    }

    /** Affine blobs labelled with one of MLX's fp modes, or with a type Ollama's MLX runner does not have. */
    @Test
    void ollamaQuantTypesThatDoNotFitTheBlobsAreRefusedNamingThem() throws IOException {
        for (String type : List.of("nvfp4", "mxfp4", "MXFP8")) {
            FakeOllamaStore store = FakeOllamaStore.create(dir.resolve("ollama-" + type));
            addOllamaModel(store, type, type);
            Path resolved = new ModelResolver(store.root()).resolve("stories:" + type);
            var e = assertThrows(dev.forkpoint.InvalidInputException.class, () -> LoadedModel.load(resolved, 1, LoadProgress.NONE).close());
            // the affine blobs' biases are what an fp type cannot have
            assertTrue(e.getMessage().contains(".weight.bias") && e.getMessage().contains("no biases")
                    && e.getMessage().contains(type.toLowerCase()) && e.getMessage().contains("__metadata__.quant_type")
                    && e.getMessage().contains(".safetensors"), e.getMessage());
        }
        FakeOllamaStore store = FakeOllamaStore.create(dir.resolve("ollama-q5_k"));
        addOllamaModel(store, "q5_k", "q5_k");
        Path resolved = new ModelResolver(store.root()).resolve("stories:q5_k");
        var e = assertThrows(dev.forkpoint.InvalidInputException.class, () -> LoadedModel.load(resolved, 1, LoadProgress.NONE).close());
        for (String needle : List.of("q5_k", "__metadata__.quant_type", ".weight", "int4", "int8", "mxfp4", "nvfp4", "mxfp8", ".safetensors")) {
            assertTrue(e.getMessage().contains(needle), "\"" + needle + "\" not in: " + e.getMessage());
        }
    }

    @Test
    void huggingFaceCacheSnapshotLoadsLikeTheFolder() throws IOException {
        Path hub = dir.resolve("hub");
        Path repo = hub.resolve("models--test-org--stories-8bit");
        Path snapshot = Files.createDirectories(repo.resolve("snapshots/0123456789abcdef"));
        Path blobs = Files.createDirectories(repo.resolve("blobs"));
        try (var s = Files.list(folder)) {
            int i = 0;
            for (Path p : s.toList()) {
                Path blob = Files.copy(p, blobs.resolve("blob" + i++));
                Files.createSymbolicLink(snapshot.resolve(p.getFileName()), snapshot.relativize(blob));
            }
        }
        Files.createDirectories(repo.resolve("refs"));
        Files.writeString(repo.resolve("refs/main"), "0123456789abcdef");
        ModelResolver resolver = ModelResolver.fromEnvironment(Map.of("HF_HUB_CACHE", hub.toString(), "HOME", dir.toString()));
        Path resolved = resolver.resolve("test-org/stories-8bit");
        assertEquals(snapshot, resolved);
        assertArrayEquals(expected, greedy(resolved));
        try (LoadedModel m = LoadedModel.load(resolved, 1, LoadProgress.NONE)) {
            assertEquals("test-org/stories-8bit", m.info().name());
        }
    }
}
