package dev.forkpoint.convert;

import dev.forkpoint.TestData;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.model.Architectures;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.reference.HfNaming;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * stories260K (F32 Llama) to an unquantised MLX folder and back to an F32 GGUF: every tensor comes back byte for byte,
 * the metadata a run needs is equal, and the round-tripped file generates the same greedy tokens. The folder itself
 * is a genuine Hugging Face layout: names, row-major shapes, and q/k rows in half-split order (checked against the
 * permutation written out from its definition here).
 */
class MlxRoundTripTest {
    @TempDir
    Path tmp;

    private static Path stories() { return TestData.shared("models/stories260K.gguf"); }

    @Test
    void ggufToMlxToGgufIsBitExactAndGeneratesTheSame() throws Exception {
        Path folder = tmp.resolve("mlx");
        Path back = tmp.resolve("back.gguf");
        ModelConverter.toMlx(stories(), folder, MlxOptions.defaults().unquantised(), (a, b) -> {});
        ModelConverter.toGguf(folder, back, GgmlType.F32, (a, b) -> {});

        try (GgufFile in = GgufFile.open(stories()); GgufFile out = GgufFile.open(back)) {
            Set<String> names = new HashSet<>();
            for (GgufTensor t : in.tensors()) {
                GgufTensor o = out.tensor(t.name());
                names.add(t.name());
                assertEquals(t.type(), o.type(), t.name());
                assertArrayEquals(t.shape(), o.shape(), t.name());
                assertArrayEquals(t.data().toArray(ValueLayout.JAVA_BYTE), o.data().toArray(ValueLayout.JAVA_BYTE), t.name() + " bytes");
            }
            assertEquals(names.size(), out.tensors().size(), "no extra tensors");

            var llama = Architectures.find("llama").orElseThrow();
            ModelConfig a = ModelConfig.fromGguf(in, llama), b = ModelConfig.fromGguf(out, llama);
            assertEquals(a.toString().replaceAll("@[0-9a-f]+", ""), b.toString().replaceAll("@[0-9a-f]+", ""));
            assertEquals(a.rope().freqBase(), b.rope().freqBase());
            assertEquals(in.getString("general.architecture"), out.getString("general.architecture"));
            assertArrayEquals(in.getStringArray("tokenizer.ggml.tokens"), out.getStringArray("tokenizer.ggml.tokens"));
            assertArrayEquals(in.getIntArray("tokenizer.ggml.token_type"), out.getIntArray("tokenizer.ggml.token_type"));
            float[] sa = in.getFloatArray("tokenizer.ggml.scores"), sb = out.getFloatArray("tokenizer.ggml.scores");
            for (int i = 0; i < sa.length; i++) assertEquals(Float.floatToIntBits(sa[i]), Float.floatToIntBits(sb[i]), "score " + i);
            for (String k : new String[]{"bos_token_id", "eos_token_id", "unknown_token_id"}) {
                assertEquals(in.getLong("tokenizer.ggml." + k), out.getLong("tokenizer.ggml." + k), k);
            }
            assertEquals("llama", out.getString("tokenizer.ggml.model"));
            assertEquals(0, out.getLong("general.file_type"));
        }

        try (LoadedModel original = LoadedModel.load(stories(), 1, LoadProgress.NONE);
             LoadedModel round = LoadedModel.load(back, 1, LoadProgress.NONE)) {
            for (String prompt : new String[]{"Once upon a time", "The little dog", "Lily and Tom went to the park."}) {
                var request = new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(40), 0, 512);
                GenerationResult x = original.generate(request, s -> {});
                GenerationResult y = round.generate(request, s -> {});
                assertArrayEquals(x.generatedIds(), y.generatedIds(), prompt);
            }
        }
    }

    @Test
    void folderIsAHuggingFaceLayout() throws Exception {
        Path folder = tmp.resolve("mlx");
        ModelConverter.toMlx(stories(), folder, MlxOptions.defaults().unquantised(), (a, b) -> {});
        assertTrue(Files.isRegularFile(folder.resolve("config.json")));
        assertTrue(Files.isRegularFile(folder.resolve("tokenizer.json")));
        assertTrue(Files.isRegularFile(folder.resolve("tokenizer_config.json")));
        assertTrue(Files.isRegularFile(folder.resolve("generation_config.json")));
        var config = new com.fasterxml.jackson.databind.ObjectMapper().readTree(folder.resolve("config.json").toFile());
        assertFalse(config.has("quantization"), "unquantised: no quantization block");
        assertEquals("LlamaForCausalLM", config.get("architectures").get(0).asText());
        assertEquals(64, config.get("hidden_size").asInt());
        assertEquals(4, config.get("num_key_value_heads").asInt());
        assertEquals(172, config.get("intermediate_size").asInt());
        assertFalse(config.get("tie_word_embeddings").asBoolean());
        assertEquals(1, config.get("bos_token_id").asInt());
        assertEquals(2, config.get("eos_token_id").asInt());
        assertEquals(1e-5f, (float) config.get("rms_norm_eps").asDouble());

        try (SafetensorsShards st = SafetensorsShards.open(folder); GgufFile in = GgufFile.open(stories())) {
            assertEquals("mlx", st.files().getFirst().metadata().get("format"));
            SafetensorsTensor q = st.tensor("model.layers.2.self_attn.q_proj.weight");
            SafetensorsTensor k = st.tensor("model.layers.2.self_attn.k_proj.weight");
            SafetensorsTensor v = st.tensor("model.layers.2.self_attn.v_proj.weight");
            assertEquals(SafetensorsDtype.F32, q.dtype());
            assertArrayEquals(new long[]{64, 64}, q.shape());
            assertArrayEquals(new long[]{32, 64}, k.shape());
            checkHalfSplit(in.tensor("blk.2.attn_q.weight"), q, 8, 8);
            checkHalfSplit(in.tensor("blk.2.attn_k.weight"), k, 4, 8);
            assertArrayEquals(in.tensor("blk.2.attn_v.weight").data().toArray(ValueLayout.JAVA_BYTE), v.data().toArray(ValueLayout.JAVA_BYTE),
                    "v is not permuted");
            assertEquals(st.tensors().size(), in.tensors().size());
            for (GgufTensor t : in.tensors()) assertTrue(st.find(HfNaming.hf(t.name())).isPresent(), t.name());
        }
    }

    /**
     * Within each head, GGUF keeps the rotary pairs adjacent (rows 2i, 2i+1) where Hugging Face splits them into halves
     * (rows i, i + d/2): HF row h·d + j·d/2 + i is GGUF row h·d + 2i + j.
     */
    private static void checkHalfSplit(GgufTensor gguf, SafetensorsTensor hf, int heads, int d) {
        int cols = gguf.rowLength();
        var F = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < d / 2; i++) {
                for (int j = 0; j < 2; j++) {
                    int hfRow = h * d + j * d / 2 + i, ggufRow = h * d + 2 * i + j;
                    for (int c = 0; c < cols; c++) {
                        assertEquals(gguf.data().get(F, 4L * ((long) ggufRow * cols + c)), hf.data().get(F, 4L * ((long) hfRow * cols + c)),
                                hf.name() + " row " + hfRow);
                    }
                }
            }
        }
        assertEquals(heads * d, Arrays.stream(hf.shape()).findFirst().orElseThrow());
    }

    @Test
    void safetensorsFileIsReadableAlone() throws Exception {
        Path folder = tmp.resolve("mlx");
        ModelConverter.toMlx(stories(), folder, MlxOptions.defaults(), (a, b) -> {});
        try (SafetensorsFile f = SafetensorsFile.open(folder.resolve("model.safetensors"))) {
            assertEquals("mlx", f.metadata().get("format"));
        }
    }

    /** With a small shard limit the folder is split as mlx-lm splits it, the index maps every tensor, and it reads back whole. */
    @Test
    void shardedFolderRoundTrips() throws Exception {
        Path folder = tmp.resolve("sharded");
        ModelConverter.toMlx(stories(), folder, MlxOptions.defaults().unquantised(), (a, b) -> {}, 200_000);
        assertFalse(Files.exists(folder.resolve("model.safetensors")));
        var index = new com.fasterxml.jackson.databind.ObjectMapper().readTree(folder.resolve("model.safetensors.index.json").toFile());
        try (SafetensorsShards st = SafetensorsShards.open(folder)) {
            int n = st.files().size();
            assertTrue(n >= 6, "1.1 MiB in shards of 200 kB: " + n);   // stories260K: about 1.1 MiB of F32 data
            for (int i = 1; i <= n; i++) {
                String name = String.format("model-%05d-of-%05d.safetensors", i, n);
                assertTrue(Files.isRegularFile(folder.resolve(name)), name);
            }
            assertEquals(st.dataBytes(), index.get("metadata").get("total_size").asLong());
            for (var f : st.files()) {
                assertEquals("mlx", f.metadata().get("format"));
                assertTrue(f.tensors().stream().mapToLong(t -> t.data().byteSize()).sum() <= 200_000 || f.tensors().size() == 1);
            }
        }
        Path back = tmp.resolve("back.gguf");
        ModelConverter.toGguf(folder, back, GgmlType.F32, (a, b) -> {});
        try (GgufFile in = GgufFile.open(stories()); GgufFile out = GgufFile.open(back)) {
            for (GgufTensor t : in.tensors()) {
                assertArrayEquals(t.data().toArray(ValueLayout.JAVA_BYTE), out.tensor(t.name()).data().toArray(ValueLayout.JAVA_BYTE), t.name());
            }
        }
    }
}
