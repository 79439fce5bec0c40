package dev.forkpoint.metal;

import static dev.forkpoint.metal.MlxHybridTest.VS_CPU;
import static dev.forkpoint.metal.MlxHybridTest.ints;
import static dev.forkpoint.metal.MlxHybridTest.reference;
import static dev.forkpoint.metal.MlxHybridTest.relativeL2;
import static dev.forkpoint.metal.MlxHybridTest.shared;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.metal.MlxHybridTest.Run;
import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxTestLibrary;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The other two architectures of the family on the MLX backend, from folders written here: Qwen3-Next (the tiny
 * Qwen3.5-MoE's tensors in Qwen3-Next's layout: flat config, fused {@code in_proj_qkvz} / {@code in_proj_ba} grouped
 * per key head, one tensor per expert), which computes what the Qwen3.5-MoE computes and so must give its float64
 * reference's greedy ids; and Qwen3-MoE (attention-only, a dense layer among the sparse ones, seeded random weights),
 * against the CPU backend.
 */
@Tag("mlx")
class MlxHybridLayoutsTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path dir;

    private static MemorySegment segment(Arena arena, float[] v) {
        MemorySegment s = arena.allocate(4L * v.length);
        MemorySegment.copy(v, 0, s, F32, 0, v.length);
        return s;
    }

    /** Rows [from, from + n) of a row-major matrix of {@code cols} columns. */
    private static float[] rows(float[] m, int from, int n, int cols) {
        return Arrays.copyOfRange(m, from * cols, (from + n) * cols);
    }

    private static float[] concat(float[]... parts) {
        int n = 0;
        for (float[] p : parts) n += p.length;
        float[] out = new float[n];
        int o = 0;
        for (float[] p : parts) {
            System.arraycopy(p, 0, out, o, p.length);
            o += p.length;
        }
        return out;
    }

    /** The tiny Qwen3.5-MoE written in Qwen3-Next's layout. */
    private Path qwen3Next() throws IOException {
        Path source = shared("models/qwen35-tiny-moe");
        Path target = Files.createDirectories(dir.resolve("qwen3-next"));
        ObjectMapper json = new ObjectMapper();
        ObjectNode text = (ObjectNode) json.readTree(source.resolve("config.json").toFile()).get("text_config");
        ObjectNode config = text.deepCopy();
        config.put("model_type", "qwen3_next");
        config.putArray("architectures").add("Qwen3NextForCausalLM");
        config.put("rope_theta", text.get("rope_parameters").get("rope_theta").asDouble());
        config.put("partial_rotary_factor", text.get("rope_parameters").get("partial_rotary_factor").asDouble());
        config.remove("rope_parameters");
        config.remove("layer_types");   // full_attention_interval (4) says the same
        config.put("norm_topk_prob", true);
        config.put("decoder_sparse_step", 1);
        json.writeValue(target.resolve("config.json").toFile(), config);
        for (String f : new String[] {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
            Files.copy(source.resolve(f), target.resolve(f));
        }
        int hk = text.get("linear_num_key_heads").asInt(), hv = text.get("linear_num_value_heads").asInt();
        int dk = text.get("linear_key_head_dim").asInt(), dv = text.get("linear_value_head_dim").asInt(), r = hv / hk;
        int hidden = text.get("hidden_size").asInt(), experts = text.get("num_experts").asInt();
        int ffn = text.get("moe_intermediate_size").asInt();
        try (SafetensorsFile in = SafetensorsFile.open(source.resolve("model.safetensors")); Arena arena = Arena.ofConfined()) {
            SafetensorsWriter out = new SafetensorsWriter();
            for (SafetensorsTensor t : in.tensors()) {
                String name = t.name().replace("model.language_model.", "model.");
                float[] v = t.data().toArray(F32);
                if (name.endsWith("in_proj_z.weight") || name.endsWith("in_proj_a.weight")) continue;   // fused below
                if (name.endsWith("in_proj_qkv.weight")) {
                    float[] z = in.tensor(t.name().replace("in_proj_qkv", "in_proj_z")).data().toArray(F32);
                    float[][] heads = new float[hk][];
                    for (int h = 0; h < hk; h++) {   // per key head: its q, its k, its r value heads' v, their z
                        heads[h] = concat(rows(v, h * dk, dk, hidden), rows(v, hk * dk + h * dk, dk, hidden),
                                rows(v, 2 * hk * dk + h * r * dv, r * dv, hidden), rows(z, h * r * dv, r * dv, hidden));
                    }
                    float[] fused = concat(heads);
                    out.tensor(name.replace("in_proj_qkv", "in_proj_qkvz"), SafetensorsDtype.F32,
                            new long[] {fused.length / hidden, hidden}, segment(arena, fused));
                } else if (name.endsWith("in_proj_b.weight")) {
                    float[] a = in.tensor(t.name().replace("in_proj_b", "in_proj_a")).data().toArray(F32);
                    float[][] heads = new float[hk][];
                    for (int h = 0; h < hk; h++) heads[h] = concat(rows(v, h * r, r, hidden), rows(a, h * r, r, hidden));
                    out.tensor(name.replace("in_proj_b", "in_proj_ba"), SafetensorsDtype.F32, new long[] {2 * hv, hidden},
                            segment(arena, concat(heads)));
                } else if (name.endsWith("mlp.experts.gate_up_proj")) {   // [E, 2I, H]: gate rows, then up rows
                    String base = name.substring(0, name.length() - "gate_up_proj".length());
                    for (int e = 0; e < experts; e++) {
                        out.tensor(base + e + ".gate_proj.weight", SafetensorsDtype.F32, new long[] {ffn, hidden},
                                segment(arena, rows(v, 2 * e * ffn, ffn, hidden)));
                        out.tensor(base + e + ".up_proj.weight", SafetensorsDtype.F32, new long[] {ffn, hidden},
                                segment(arena, rows(v, (2 * e + 1) * ffn, ffn, hidden)));
                    }
                } else if (name.endsWith("mlp.experts.down_proj")) {   // [E, H, I]
                    String base = name.substring(0, name.length() - "down_proj".length());
                    for (int e = 0; e < experts; e++) {
                        out.tensor(base + e + ".down_proj.weight", SafetensorsDtype.F32, new long[] {hidden, ffn},
                                segment(arena, rows(v, e * hidden, hidden, ffn)));
                    }
                } else {
                    out.tensor(name, SafetensorsDtype.F32, t.shape(), segment(arena, v));
                }
            }
            out.write(target.resolve("model.safetensors"));
        }
        return target;
    }

    @Test
    void qwen3NextGivesTheQwen35MoeReferencesIdsAndTheCpuBackendsLogits() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        JsonNode ref = reference("moe");
        int[] prompt = ints(ref.get("prompt_ids"));
        int[] expected = Arrays.copyOf(ints(ref.get("generated_ids")), 16);
        Path model = qwen3Next();
        try (Run gpu = Run.open(model, new MlxBackend(mlx)); Run cpu = Run.open(model, new CpuBackend(1))) {
            assertEquals("qwen3next", gpu.arch().config().architecture());
            compare("qwen3next", gpu, cpu, prompt, expected);
        }
    }

    /** Prefill in one chunk, then greedy decode on both; every step's logits within {@link MlxHybridTest#VS_CPU}. */
    private static void compare(String what, Run gpu, Run cpu, int[] prompt, int[] expected) {
        KvStore gkv = gpu.newSequence(), ckv = cpu.newSequence();
        float[] g = gpu.prefill(gkv, prompt, prompt.length), c = cpu.prefill(ckv, prompt, prompt.length);
        int steps = expected != null ? expected.length : 16;
        float[][] gSeen = new float[steps][], cSeen = new float[steps][];
        int[] gIds = gpu.greedy(gkv, g, steps, gSeen), cIds = cpu.greedy(ckv, c, steps, cSeen);
        double worst = 0;
        for (int i = 0; i < steps; i++) worst = Math.max(worst, relativeL2(gSeen[i], cSeen[i]));
        System.out.printf(Locale.ROOT, "MlxHybridLayoutsTest %s: worst of %d steps vs CPU rel L2 %.2e; ids %s%n", what, steps,
                worst, Arrays.toString(gIds));
        assertTrue(worst < VS_CPU, what + ": logits vs the CPU backend's: relative L2 " + worst);
        assertArrayEquals(cIds, gIds, what + ": greedy ids vs the CPU backend");
        if (expected != null) assertArrayEquals(expected, gIds, what + ": greedy ids vs the reference");
    }

    /** A seeded random Qwen3-MoE folder: 3 attention layers, the middle one dense (mlp_only_layers), top-2 of 4 experts. */
    private Path qwen3Moe() throws IOException {
        Path tokenizerFrom = shared("models/qwen35-tiny-moe");
        Path target = Files.createDirectories(dir.resolve("qwen3-moe"));
        int hidden = 64, layers = 3, heads = 4, kvHeads = 2, headDim = 16, ffn = 48, expertFfn = 32, experts = 4, vocab = 50257;
        ObjectNode config = new ObjectMapper().createObjectNode();
        config.put("model_type", "qwen3_moe").putArray("architectures").add("Qwen3MoeForCausalLM");
        config.put("hidden_size", hidden).put("num_hidden_layers", layers).put("num_attention_heads", heads)
                .put("num_key_value_heads", kvHeads).put("head_dim", headDim).put("intermediate_size", ffn)
                .put("moe_intermediate_size", expertFfn).put("num_experts", experts).put("num_experts_per_tok", 2)
                .put("norm_topk_prob", true).put("decoder_sparse_step", 1).put("vocab_size", vocab)
                .put("rms_norm_eps", 1e-6).put("rope_theta", 1000000.0).put("max_position_embeddings", 2048)
                .put("tie_word_embeddings", false).put("bos_token_id", 50256).put("eos_token_id", 50256);
        config.putArray("mlp_only_layers").add(1);
        new ObjectMapper().writeValue(target.resolve("config.json").toFile(), config);
        for (String f : new String[] {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
            Files.copy(tokenizerFrom.resolve(f), target.resolve(f));
        }
        SplittableRandom random = new SplittableRandom(35);
        try (Arena arena = Arena.ofConfined()) {
            SafetensorsWriter out = new SafetensorsWriter();
            matrix(out, arena, random, "model.embed_tokens.weight", vocab, hidden, 1.0);
            norm(out, arena, random, "model.norm.weight", hidden);
            matrix(out, arena, random, "lm_head.weight", vocab, hidden, 1.0);   // untied: tied ones echo the input token
            for (int l = 0; l < layers; l++) {
                String p = "model.layers." + l + ".";
                norm(out, arena, random, p + "input_layernorm.weight", hidden);
                norm(out, arena, random, p + "post_attention_layernorm.weight", hidden);
                matrix(out, arena, random, p + "self_attn.q_proj.weight", heads * headDim, hidden, 1 / Math.sqrt(hidden));
                matrix(out, arena, random, p + "self_attn.k_proj.weight", kvHeads * headDim, hidden, 1 / Math.sqrt(hidden));
                matrix(out, arena, random, p + "self_attn.v_proj.weight", kvHeads * headDim, hidden, 1 / Math.sqrt(hidden));
                matrix(out, arena, random, p + "self_attn.o_proj.weight", hidden, heads * headDim, 1 / Math.sqrt(heads * headDim));
                norm(out, arena, random, p + "self_attn.q_norm.weight", headDim);
                norm(out, arena, random, p + "self_attn.k_norm.weight", headDim);
                if (l == 1) {
                    matrix(out, arena, random, p + "mlp.gate_proj.weight", ffn, hidden, 1 / Math.sqrt(hidden));
                    matrix(out, arena, random, p + "mlp.up_proj.weight", ffn, hidden, 1 / Math.sqrt(hidden));
                    matrix(out, arena, random, p + "mlp.down_proj.weight", hidden, ffn, 1 / Math.sqrt(ffn));
                } else {
                    matrix(out, arena, random, p + "mlp.gate.weight", experts, hidden, 1 / Math.sqrt(hidden));
                    for (int e = 0; e < experts; e++) {
                        String x = p + "mlp.experts." + e + ".";
                        matrix(out, arena, random, x + "gate_proj.weight", expertFfn, hidden, 1 / Math.sqrt(hidden));
                        matrix(out, arena, random, x + "up_proj.weight", expertFfn, hidden, 1 / Math.sqrt(hidden));
                        matrix(out, arena, random, x + "down_proj.weight", hidden, expertFfn, 1 / Math.sqrt(expertFfn));
                    }
                }
            }
            out.write(target.resolve("model.safetensors"));
        }
        return target;
    }

    private static void matrix(SafetensorsWriter out, Arena arena, SplittableRandom random, String name, int rows, int cols, double scale) {
        float[] v = new float[rows * cols];
        for (int i = 0; i < v.length; i++) v[i] = (float) (random.nextGaussian() * scale);
        out.tensor(name, SafetensorsDtype.F32, new long[] {rows, cols}, segment(arena, v));
    }

    private static void norm(SafetensorsWriter out, Arena arena, SplittableRandom random, String name, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) (1 + 0.1 * random.nextGaussian());
        out.tensor(name, SafetensorsDtype.F32, new long[] {n}, segment(arena, v));
    }

    @Test
    void qwen3MoeGivesTheCpuBackendsIdsAndLogits() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        int[] prompt = Arrays.copyOf(ints(reference("moe").get("prompt_ids")), 20);
        Path model = qwen3Moe();
        try (Run gpu = Run.open(model, new MlxBackend(mlx)); Run cpu = Run.open(model, new CpuBackend(1))) {
            assertEquals("qwen3moe", gpu.arch().config().architecture());
            assertNull(gpu.recurrent(), "attention only: no recurrent state");
            compare("qwen3moe", gpu, cpu, prompt, null);
        }
    }
}
