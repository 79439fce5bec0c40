package dev.forkpoint.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.reference.LlamaCppQwen35Gguf;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static dev.forkpoint.engine.Vectors.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Qwen3.5 tiny models (dense and mixture of experts) written as llama.cpp's converter writes them
 * ({@link LlamaCppQwen35Gguf}: {@code qwen35} / {@code qwen35moe}, 1 + w norms, ssm_a = −exp(A_log), tiled value
 * heads, split experts) load and run as the same models loaded from their Hugging Face folders do.
 */
class Qwen35GgufTest {
    @TempDir
    static Path dir;
    static final Map<String, Path> folders = new HashMap<>();
    static final Map<String, LoadedModel> hf = new HashMap<>(), gguf = new HashMap<>(), q8 = new HashMap<>();
    static final Map<String, JsonNode> references = new HashMap<>();

    @BeforeAll
    static void load() throws Exception {
        for (String m : new String[] {"dense", "moe"}) {
            Path folder = TestData.shared("models/qwen35-tiny-" + m);
            folders.put(m, folder);
            references.put(m, new ObjectMapper().readTree(TestData.shared("reference/qwen35-tiny-" + m + "_greedy.json").toFile()));
            hf.put(m, LoadedModel.load(folder, 2, LoadProgress.NONE));
            Path f32 = LlamaCppQwen35Gguf.write(folder, dir.resolve(m + "-f32.gguf"), GgmlType.F32);
            gguf.put(m, LoadedModel.load(f32, 2, LoadProgress.NONE));
            Path q = LlamaCppQwen35Gguf.write(folder, dir.resolve(m + "-q8_0.gguf"), GgmlType.Q8_0);
            q8.put(m, LoadedModel.load(q, 2, LoadProgress.NONE));
        }
    }

    @AfterAll
    static void close() {
        for (var map : java.util.List.of(hf, gguf, q8)) map.values().forEach(LoadedModel::close);
    }

    /**
     * The GGUF file and the folder compute the same model; their logits (up to ~22 in size) differ by float32 rounding
     * only: llama.cpp's tiled value heads make out_proj sum its columns in another order, ssm_a = −exp(A_log) is
     * turned back into A_log (the CPU kernels' vector reductions no longer vary between JIT tiers: they sum lanes in
     * order). Measured: 1.0–1.4e-5 (dense), 1.9–2.1e-5 (MoE), both
     * paths 1.5–4e-5 from the float64 reference. So: 1e-6 of the largest logit (≈ 2.2e-5 here) plus 1e-5.
     */
    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void lastPromptLogitsEqualTheHuggingFaceFolders(String m) {
        int[] prompt = ints(references.get(m).get("prompt_ids"));
        float[] folder = lastLogits(hf.get(m), prompt), file = lastLogits(gguf.get(m), prompt);
        double scale = 0;
        for (float x : folder) scale = Math.max(scale, Math.abs(x));
        double worst = maxDiff(folder, file);
        assertTrue(worst <= 1e-5 + 1e-6 * scale, m + ": GGUF and Hugging Face logits differ by up to " + worst + " (largest logit " + scale + ")");
        JsonNode last = references.get(m).get("last_prompt_position_logits");
        double fromReference = 0;
        for (int i = 0; i < last.size(); i++) fromReference = Math.max(fromReference, Math.abs(last.get(i).asDouble() - file[i]));
        assertTrue(fromReference <= 5e-4, m + ": GGUF logits differ from the float64 reference by up to " + fromReference);
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void greedyIdsMatchTheFloat64Reference(String m) {
        JsonNode ref = references.get(m);
        int[] expected = ints(ref.get("generated_ids"));
        assertArrayEquals(expected, greedy(gguf.get(m), ints(ref.get("prompt_ids")), expected.length), m + ": greedy ids");
    }

    /**
     * The Q8_0 file (llama.cpp's --outtype q8_0 choice of types) loads and computes the same model roughly: Q8_0
     * weights and Q8_0-quantised activations move this random tiny model's logits by a few percent (measured cosine
     * 0.997 dense, 0.987 MoE) but not its leading tokens. Not its top token exactly: the dense model's two largest F32
     * logits are 0.18 apart (21.15, 20.97), inside the Q8_0 noise (the activations are requantised at every layer, and
     * a float rounding that moves one activation across a rounding boundary moves its code by one: the Java and the
     * native kernels, equal to 1e-5 per product, put these two tokens in opposite orders). So each side's top token is
     * among the other's top three, and F32's top token loses at most 0.5 to the Q8_0 leader.
     */
    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void q8_0FileStaysCloseToF32(String m) throws Exception {
        int[] prompt = ints(references.get(m).get("prompt_ids"));
        float[] exact = lastLogits(gguf.get(m), prompt), quantised = lastLogits(q8.get(m), prompt);
        double dot = 0, ne = 0, nq = 0;
        for (int i = 0; i < exact.length; i++) {
            dot += (double) exact[i] * quantised[i];
            ne += (double) exact[i] * exact[i];
            nq += (double) quantised[i] * quantised[i];
        }
        double cosine = dot / Math.sqrt(ne * nq);
        assertTrue(cosine >= 0.95, m + ": Q8_0 and F32 logits have cosine " + cosine);
        int top = argmax(exact), quantisedTop = argmax(quantised);
        assertTrue(rank(quantised, top) < 3 && rank(exact, quantisedTop) < 3,
                m + ": F32 top token " + top + " is Q8_0's #" + rank(quantised, top) + ", Q8_0's " + quantisedTop + " is F32's #" + rank(exact, quantisedTop));
        assertTrue(quantised[quantisedTop] - quantised[top] <= 0.5, m + ": F32's top token trails Q8_0's by " + (quantised[quantisedTop] - quantised[top]));
        Map<String, Integer> types = q8.get(m).info().tensorTypes();
        assertTrue(types.getOrDefault("Q8_0", 0) > 0 && types.getOrDefault("F32", 0) > 0, types.toString());
        // the shared expert's down projection has rows of 48, not whole Q8_0 blocks: F16, as llama.cpp falls back
        assertEquals(m.equals("moe") ? 4 : 0, types.getOrDefault("F16", 0), types.toString());
    }

    /** How many entries of {@code v} are larger than v[i]. */
    private static int rank(float[] v, int i) {
        int r = 0;
        for (float x : v) if (x > v[i]) r++;
        return r;
    }

    @ParameterizedTest
    @CsvSource({"dense, qwen35", "moe, qwen35moe"})
    void showInfoMatchesTheHuggingFaceFolder(String m, String arch) throws Exception {
        ModelInfo g = gguf.get(m).info(), h = hf.get(m).info();
        assertEquals(arch, g.architecture());
        assertEquals("linear ×3, attention", g.layerKinds());
        assertEquals("gpt2", g.tokenizer());
        assertEquals(50257, g.vocabSize());
        assertEquals(m.equals("moe") ? "top-2 of 4 + shared expert" : null, g.experts());
        assertEquals(h.architecture(), g.architecture());
        assertEquals(h.layerKinds(), g.layerKinds());
        assertEquals(h.contextLength(), g.contextLength());
        assertEquals(h.embeddingLength(), g.embeddingLength());
        assertEquals(h.layers(), g.layers());
        assertEquals(h.heads(), g.heads());
        assertEquals(h.kvHeads(), g.kvHeads());
        assertEquals(h.vocabSize(), g.vocabSize());
        assertEquals(h.kvBytesPerToken(), g.kvBytesPerToken());
        assertEquals(h.recurrentBytesPerSequence(), g.recurrentBytesPerSequence());
        assertEquals(h.experts(), g.experts());
        assertEquals(h.parameterCount(), g.parameterCount());
        if (m.equals("dense")) assertNull(g.tensorTypes().get("Q8_0"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void tokenizerFromGgufMetadataEncodesAsTheFolders(String m) {
        String text = "Hello, world! The quick brown fox jumps over 12345 lazy dogs.\n  Ünïcödé — 漢字";
        assertArrayEquals(hf.get(m).tokenizer().encode(text, true, true), gguf.get(m).tokenizer().encode(text, true, true));
    }

    /** The tiled value-head order matters: the same file with Hugging Face's grouped order computes something else. */
    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void groupedValueHeadsInAGgufFileGiveOtherLogits(String m) throws Exception {
        int[] prompt = ints(references.get(m).get("prompt_ids"));
        Path grouped = LlamaCppQwen35Gguf.write(folders.get(m), dir.resolve(m + "-grouped.gguf"), GgmlType.F32, name -> true, false);
        try (LoadedModel wrong = LoadedModel.load(grouped, 2, LoadProgress.NONE)) {
            double worst = maxDiff(lastLogits(gguf.get(m), prompt), lastLogits(wrong, prompt));
            assertTrue(worst > 0.1, m + ": grouped value heads change the logits by only " + worst);
        }
        // the same file saying ssm.v_head_reordered = false (as Ollama's converter writes the key) is read grouped
        String arch = m.equals("moe") ? "qwen35moe" : "qwen35";
        Path declared = dir.resolve(m + "-grouped-declared.gguf");
        try (var f = dev.forkpoint.format.gguf.GgufFile.open(grouped)) {
            var w = new dev.forkpoint.format.gguf.GgufWriter().putAll(f.metadata());
            w.put(arch + ".ssm.v_head_reordered", dev.forkpoint.format.gguf.MetadataValue.ofBool(false));
            for (var t : f.tensors()) w.add(new dev.forkpoint.format.gguf.GgufWriter.TensorData(t.name(), t.type(), t.shape(), t.data()));
            w.write(declared);
        }
        try (LoadedModel right = LoadedModel.load(declared, 2, LoadProgress.NONE)) {
            double worst = maxDiff(lastLogits(gguf.get(m), prompt), lastLogits(right, prompt));
            assertTrue(worst <= 3e-5, m + ": a file declaring grouped value heads differs by " + worst);
        }
    }

    @ParameterizedTest
    @CsvSource({"dense, blk.0.ssm_a", "dense, blk.1.ssm_conv1d.weight", "dense, blk.2.ssm_dt.bias",
            "dense, blk.0.ssm_norm.weight", "moe, blk.1.ssm_alpha.weight", "moe, blk.2.ssm_out.weight"})
    void fileMissingAnSsmTensorIsRefusedNamingIt(String m, String missing) throws Exception {
        Path broken = LlamaCppQwen35Gguf.write(folders.get(m), dir.resolve(m + "-without-" + missing + ".gguf"), GgmlType.F32,
                name -> !name.equals(missing));
        var e = assertThrows(ModelFormatException.class, () -> LoadedModel.load(broken, 1, LoadProgress.NONE).close());
        assertTrue(e.getMessage().contains("tensor " + missing + ":") && e.getMessage().contains("missing"), e.getMessage());
    }

    /** llama.cpp's {@code attention.recurrent_layers}, when present, decides the layer kinds over the interval. */
    @org.junit.jupiter.api.Test
    void recurrentLayersMetadataWinsOverTheInterval() throws Exception {
        Path source = dir.resolve("dense-f32.gguf"), target = dir.resolve("dense-recurrent-layers.gguf");
        try (var f = dev.forkpoint.format.gguf.GgufFile.open(source)) {
            var w = new dev.forkpoint.format.gguf.GgufWriter().putAll(f.metadata());
            w.put("qwen35.full_attention_interval", dev.forkpoint.format.gguf.MetadataValue.ofU32(2));   // wrong on purpose
            var kinds = new java.util.ArrayList<dev.forkpoint.format.gguf.MetadataValue>();
            for (boolean b : new boolean[] {true, true, true, false}) kinds.add(dev.forkpoint.format.gguf.MetadataValue.ofBool(b));
            w.put("qwen35.attention.recurrent_layers", new dev.forkpoint.format.gguf.MetadataValue.Array(dev.forkpoint.format.gguf.MetadataType.BOOL, kinds));
            for (var t : f.tensors()) w.add(new dev.forkpoint.format.gguf.GgufWriter.TensorData(t.name(), t.type(), t.shape(), t.data()));
            w.write(target);
        }
        int[] prompt = ints(references.get("dense").get("prompt_ids"));
        try (LoadedModel m = LoadedModel.load(target, 2, LoadProgress.NONE)) {
            assertEquals("linear ×3, attention", m.info().layerKinds());
            assertArrayEquals(lastLogits(gguf.get("dense"), prompt), lastLogits(m, prompt));
        }
    }
}
