package dev.forkpoint.engine;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.TestData;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.SplittableRandom;

import static dev.forkpoint.engine.Vectors.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The other two layouts of the family, each checked against a model of known output built from the same weights:
 * <ul>
 *   <li>Qwen3-Next (flat config.json, {@code model.} prefix, the fused {@code in_proj_qkvz} / {@code in_proj_ba}
 *       projections grouped per key head, one tensor per expert) written from the tiny Qwen3.5-MoE computes what
 *       the Qwen3.5-MoE computes;</li>
 *   <li>mlx-lm's layout of Qwen3.5-MoE ({@code language_model.model.} prefix, the convolution as [C, K, 1], the
 *       zero-centred norms stored shifted by 1, the experts as stacked {@code switch_mlp} modules) computes what the
 *       Hugging Face folder computes;</li>
 *   <li>Ollama's safetensors store of Qwen3.5-MoE (how {@code qwen3.6:35b-mlx} is stored: one blob per tensor under
 *       its Hugging Face name, the JSON files as named blobs, a manifest) computes what the folder computes;</li>
 *   <li>Qwen3-MoE (attention-only, GGUF {@code qwen3moe}) whose experts are all copies of a Qwen3 model's dense
 *       feed-forward computes what that Qwen3 computes (the renormalised expert weights sum to 1).</li>
 * </ul>
 */
class Qwen3NextAndMoeLayoutTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path dir;

    private static float[] floats(SafetensorsTensor t) {
        return t.data().toArray(F32);
    }

    private static MemorySegment segment(Arena arena, float[] v) {
        MemorySegment s = arena.allocate(4L * v.length);
        MemorySegment.copy(v, 0, s, F32, 0, v.length);
        return s;
    }

    /** The logits after the prompt, prefilled in one chunk on a fresh sequence. */
    @Test
    void qwen3NextsFusedLayoutComputesWhatQwen35MoeComputes() throws Exception {
        Path source = TestData.shared("models/qwen35-tiny-moe");
        Path target = dir.resolve("qwen3-next-tiny");
        Files.createDirectories(target);
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = (ObjectNode) json.readTree(source.resolve("config.json").toFile());
        ObjectNode text = (ObjectNode) root.get("text_config");
        ObjectNode flat = text.deepCopy();
        flat.put("model_type", "qwen3_next");
        flat.putArray("architectures").add("Qwen3NextForCausalLM");
        flat.put("rope_theta", text.get("rope_parameters").get("rope_theta").asDouble());
        flat.put("partial_rotary_factor", 0.25);
        flat.remove("rope_parameters");
        flat.remove("layer_types");   // the interval (4) gives the same schedule
        flat.put("norm_topk_prob", true);
        flat.put("decoder_sparse_step", 1);
        json.writeValue(target.resolve("config.json").toFile(), flat);
        for (String f : new String[] {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
            Files.copy(source.resolve(f), target.resolve(f));
        }
        int hk = text.get("linear_num_key_heads").asInt(), hv = text.get("linear_num_value_heads").asInt();
        int dk = text.get("linear_key_head_dim").asInt(), dv = text.get("linear_value_head_dim").asInt(), r = hv / hk;
        int hidden = text.get("hidden_size").asInt(), experts = text.get("num_experts").asInt();
        int moe = text.get("moe_intermediate_size").asInt();
        try (SafetensorsFile in = SafetensorsFile.open(source.resolve("model.safetensors")); Arena arena = Arena.ofConfined()) {
            var out = new SafetensorsWriter();
            for (SafetensorsTensor t : in.tensors()) {
                String name = t.name().replace("model.language_model.", "model.");
                float[] v = floats(t);
                if (name.endsWith("linear_attn.in_proj_qkv.weight")) {
                    String base = name.substring(0, name.length() - "in_proj_qkv.weight".length());
                    float[] z = floats(in.tensor(t.name().replace("in_proj_qkv", "in_proj_z")));
                    int block = 2 * dk + 2 * r * dv;
                    float[] fused = new float[hk * block * hidden];
                    for (int h = 0; h < hk; h++) {
                        int o = h * block;
                        copyRows(v, h * dk, fused, o, dk, hidden);                              // q of key head h
                        copyRows(v, hk * dk + h * dk, fused, o + dk, dk, hidden);               // k
                        copyRows(v, 2 * hk * dk + h * r * dv, fused, o + 2 * dk, r * dv, hidden);   // its r value heads
                        copyRows(z, h * r * dv, fused, o + 2 * dk + r * dv, r * dv, hidden);     // their z
                    }
                    out.tensor(base + "in_proj_qkvz.weight", SafetensorsDtype.F32, new long[] {hk * block, hidden}, segment(arena, fused));
                } else if (name.endsWith("linear_attn.in_proj_b.weight")) {
                    float[] a = floats(in.tensor(t.name().replace("in_proj_b", "in_proj_a")));
                    float[] fused = new float[2 * hv * hidden];
                    for (int h = 0; h < hk; h++) {
                        copyRows(v, h * r, fused, h * 2 * r, r, hidden);
                        copyRows(a, h * r, fused, h * 2 * r + r, r, hidden);
                    }
                    out.tensor(name.replace("in_proj_b", "in_proj_ba"), SafetensorsDtype.F32, new long[] {2 * hv, hidden}, segment(arena, fused));
                } else if (name.endsWith("in_proj_z.weight") || name.endsWith("in_proj_a.weight")) {
                    continue;   // fused above
                } else if (name.endsWith("mlp.experts.gate_up_proj")) {
                    String base = name.substring(0, name.length() - "gate_up_proj".length());
                    for (int e = 0; e < experts; e++) {
                        float[] gate = Arrays.copyOfRange(v, e * 2 * moe * hidden, (e * 2 + 1) * moe * hidden);
                        float[] up = Arrays.copyOfRange(v, (e * 2 + 1) * moe * hidden, (e + 1) * 2 * moe * hidden);
                        out.tensor(base + e + ".gate_proj.weight", SafetensorsDtype.F32, new long[] {moe, hidden}, segment(arena, gate));
                        out.tensor(base + e + ".up_proj.weight", SafetensorsDtype.F32, new long[] {moe, hidden}, segment(arena, up));
                    }
                } else if (name.endsWith("mlp.experts.down_proj")) {
                    String base = name.substring(0, name.length() - "down_proj".length());
                    for (int e = 0; e < experts; e++) {
                        float[] down = Arrays.copyOfRange(v, e * hidden * moe, (e + 1) * hidden * moe);
                        out.tensor(base + e + ".down_proj.weight", SafetensorsDtype.F32, new long[] {hidden, moe}, segment(arena, down));
                    }
                } else {
                    out.tensor(name, SafetensorsDtype.F32, t.shape(), segment(arena, v));
                }
            }
            out.write(target.resolve("model.safetensors"));
        }
        int[] prompt = {49218, 49085, 49649, 19107, 8611, 46398, 5271, 13151, 6974, 16036, 26939, 5934};
        try (LoadedModel original = LoadedModel.load(source, 2, LoadProgress.NONE);
             LoadedModel next = LoadedModel.load(target, 2, LoadProgress.NONE)) {
            assertEquals("qwen3next", next.config().architecture());
            assertEquals("linear ×3, attention", next.info().layerKinds());
            float[] a = lastLogits(original, prompt), b = lastLogits(next, prompt);
            assertTrue(maxDiff(a, b) <= 1e-5, "Qwen3-Next layout vs Qwen3.5-MoE: logits differ by " + maxDiff(a, b));
        }
    }

    @Test
    void llamaCppsQwen3NextGgufComputesWhatQwen35MoeComputes() throws Exception {
        Path source = TestData.shared("models/qwen35-tiny-moe");
        Path gguf = dev.forkpoint.reference.LlamaCppQwen35Gguf.writeQwen3Next(source, dir.resolve("qwen3next.gguf"));
        int[] prompt = {49218, 49085, 49649, 19107, 8611, 46398, 5271, 13151, 6974, 16036, 26939, 5934};
        try (LoadedModel original = LoadedModel.load(source, 2, LoadProgress.NONE);
             LoadedModel next = LoadedModel.load(gguf, 2, LoadProgress.NONE)) {
            assertEquals("qwen3next", next.config().architecture());
            float[] a = lastLogits(original, prompt), b = lastLogits(next, prompt);
            // llama.cpp stores −exp(A_log) and 1 + w: converting back rounds (see Qwen35GgufTest)
            assertTrue(maxDiff(a, b) <= 3e-5, "llama.cpp's Qwen3-Next GGUF vs Qwen3.5-MoE: logits differ by " + maxDiff(a, b));
        }
    }

    @Test
    void ollamasSafetensorsStoreComputesWhatTheFolderComputes() throws Exception {
        Path source = TestData.shared("models/qwen35-tiny-moe");
        var store = dev.forkpoint.store.FakeOllamaStore.create(dir.resolve("ollama"));
        ObjectMapper json = new ObjectMapper();
        ObjectNode manifest = json.createObjectNode().put("schemaVersion", 2);
        var layers = manifest.putArray("layers");
        Path scratch = Files.createDirectories(dir.resolve("blob"));
        try (SafetensorsFile in = SafetensorsFile.open(source.resolve("model.safetensors"))) {
            for (SafetensorsTensor t : in.tensors()) {
                Path file = scratch.resolve("t.safetensors");
                new SafetensorsWriter().tensor(t.name(), t.dtype(), t.shape(), t.data()).write(file);
                byte[] bytes = Files.readAllBytes(file);
                layers.addObject().put("mediaType", "application/vnd.ollama.image.tensor").put("digest", store.addBlob(bytes))
                        .put("size", bytes.length).put("name", t.name());
            }
        }
        for (String name : new String[] {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
            byte[] bytes = Files.readAllBytes(source.resolve(name));
            layers.addObject().put("mediaType", "application/vnd.ollama.image.json").put("digest", store.addBlob(bytes))
                    .put("size", bytes.length).put("name", name);
        }
        store.addManifest("registry.ollama.ai", "library", "qwen3.6", "tiny-mlx", json.writeValueAsString(manifest));
        Path resolved = new dev.forkpoint.store.ModelResolver(store.root()).resolve("qwen3.6:tiny-mlx");
        int[] prompt = {49218, 49085, 49649, 19107, 8611, 46398, 5271, 13151, 6974, 16036, 26939, 5934};
        try (LoadedModel original = LoadedModel.load(source, 2, LoadProgress.NONE);
             LoadedModel ollama = LoadedModel.load(resolved, 2, LoadProgress.NONE)) {
            assertEquals("qwen35moe", ollama.config().architecture());
            assertArrayEquals(lastLogits(original, prompt), lastLogits(ollama, prompt), "the same tensors under the same names");
        }
    }

    @Test
    void mlxLmLayoutComputesWhatTheHuggingFaceFolderComputes() throws Exception {
        Path source = TestData.shared("models/qwen35-tiny-moe");
        Path target = dir.resolve("qwen35-moe-mlx-layout");
        Files.createDirectories(target);
        for (String f : new String[] {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
            Files.copy(source.resolve(f), target.resolve(f));
        }
        ObjectNode text = (ObjectNode) new ObjectMapper().readTree(source.resolve("config.json").toFile()).get("text_config");
        int hidden = text.get("hidden_size").asInt(), experts = text.get("num_experts").asInt(), moe = text.get("moe_intermediate_size").asInt();
        try (SafetensorsFile in = SafetensorsFile.open(source.resolve("model.safetensors")); Arena arena = Arena.ofConfined()) {
            var out = new SafetensorsWriter();
            for (SafetensorsTensor t : in.tensors()) {
                String name = t.name().startsWith("lm_head.") ? "language_model." + t.name()
                        : t.name().replace("model.language_model.", "language_model.model.");
                float[] v = floats(t);
                boolean zeroCentred = name.endsWith("input_layernorm.weight") || name.endsWith("post_attention_layernorm.weight")
                        || name.endsWith("model.norm.weight") || name.endsWith("q_norm.weight") || name.endsWith("k_norm.weight");
                if (zeroCentred) for (int i = 0; i < v.length; i++) v[i] += 1f;
                if (name.endsWith("conv1d.weight")) {
                    out.tensor(name, SafetensorsDtype.F32, new long[] {t.shape()[0], t.shape()[2], 1}, segment(arena, v));
                } else if (name.endsWith("mlp.experts.gate_up_proj")) {
                    String base = name.replace("experts.gate_up_proj", "switch_mlp.");
                    float[] gate = new float[experts * moe * hidden], up = new float[experts * moe * hidden];
                    for (int e = 0; e < experts; e++) {
                        System.arraycopy(v, e * 2 * moe * hidden, gate, e * moe * hidden, moe * hidden);
                        System.arraycopy(v, (e * 2 + 1) * moe * hidden, up, e * moe * hidden, moe * hidden);
                    }
                    out.tensor(base + "gate_proj.weight", SafetensorsDtype.F32, new long[] {experts, moe, hidden}, segment(arena, gate));
                    out.tensor(base + "up_proj.weight", SafetensorsDtype.F32, new long[] {experts, moe, hidden}, segment(arena, up));
                } else if (name.endsWith("mlp.experts.down_proj")) {
                    out.tensor(name.replace("experts.down_proj", "switch_mlp.down_proj.weight"), SafetensorsDtype.F32, t.shape(), segment(arena, v));
                } else {
                    out.tensor(name, SafetensorsDtype.F32, t.shape(), segment(arena, v));
                }
            }
            out.write(target.resolve("model.safetensors"));
        }
        int[] prompt = {49218, 49085, 49649, 19107, 8611, 46398, 5271, 13151, 6974, 16036, 26939, 5934};
        try (LoadedModel original = LoadedModel.load(source, 2, LoadProgress.NONE);
             LoadedModel mlx = LoadedModel.load(target, 2, LoadProgress.NONE)) {
            float[] a = lastLogits(original, prompt), b = lastLogits(mlx, prompt);
            assertTrue(maxDiff(a, b) <= 1e-5, "mlx-lm layout vs the Hugging Face folder: logits differ by " + maxDiff(a, b));
        }
    }

    private static void copyRows(float[] src, int fromRow, float[] dst, int toRow, int rows, int cols) {
        System.arraycopy(src, fromRow * cols, dst, toRow * cols, rows * cols);
    }

    @Test
    void qwen3MoeWithCopiesOfADenseFeedForwardComputesWhatQwen3Computes() throws Exception {
        Path dense = dev.forkpoint.reference.RandomModelsAccess.qwen3(dir, 11);
        Path moe = dir.resolve("qwen3moe.gguf");
        int experts = 4;
        var rng = new SplittableRandom(5);
        try (GgufFile f = GgufFile.open(dense); Arena arena = Arena.ofConfined()) {
            var w = new GgufWriter();
            for (Map.Entry<String, MetadataValue> e : f.metadata().entrySet()) {
                String key = e.getKey().startsWith("qwen3.") ? "qwen3moe." + e.getKey().substring("qwen3.".length()) : e.getKey();
                if (!key.equals("qwen3moe.feed_forward_length")) w.put(key, e.getValue());
            }
            w.put("general.architecture", MetadataValue.of("qwen3moe"));
            int ffn = f.getInt("qwen3.feed_forward_length"), dim = f.getInt("qwen3.embedding_length");
            w.put("qwen3moe.expert_count", MetadataValue.ofU32(experts));
            w.put("qwen3moe.expert_used_count", MetadataValue.ofU32(2));
            w.put("qwen3moe.expert_feed_forward_length", MetadataValue.ofU32(ffn));
            for (GgufTensor t : f.tensors()) {
                String n = t.name();
                if (n.endsWith(".ffn_gate.weight") || n.endsWith(".ffn_up.weight") || n.endsWith(".ffn_down.weight")) {
                    String stacked = n.replace(".weight", "_exps.weight");
                    long bytes = t.data().byteSize();
                    MemorySegment s = arena.allocate(bytes * experts);
                    for (int e = 0; e < experts; e++) MemorySegment.copy(t.data(), 0, s, e * bytes, bytes);
                    w.add(new GgufWriter.TensorData(stacked, t.type(), new long[] {t.shape()[0], t.shape()[1], experts}, s));
                    if (n.endsWith(".ffn_gate.weight")) {
                        float[] router = new float[dim * experts];
                        for (int i = 0; i < router.length; i++) router[i] = (float) (rng.nextGaussian() / Math.sqrt(dim));
                        w.add(new GgufWriter.TensorData(n.replace("ffn_gate", "ffn_gate_inp"), GgmlType.F32, new long[] {dim, experts}, segment(arena, router)));
                    }
                } else {
                    w.add(new GgufWriter.TensorData(n, t.type(), t.shape(), t.data()));
                }
            }
            w.write(moe);
        }
        int[] prompt = {256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100};
        try (LoadedModel a = LoadedModel.load(dense, 2, LoadProgress.NONE); LoadedModel b = LoadedModel.load(moe, 2, LoadProgress.NONE)) {
            assertEquals("top-2 of 4", b.info().experts());
            float[] la = lastLogits(a, prompt), lb = lastLogits(b, prompt);
            assertTrue(maxDiff(la, lb) <= 1e-4, "Qwen3-MoE of copied experts vs Qwen3: logits differ by " + maxDiff(la, lb));
            assertArrayEquals(topIds(la), topIds(lb));
        }
    }

    private static int[] topIds(float[] v) {
        return java.util.stream.IntStream.range(0, v.length).boxed().sorted((x, y) -> Float.compare(v[y], v[x])).limit(5).mapToInt(i -> i).toArray();
    }
}
