package dev.forkpoint.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import dev.forkpoint.tokenizer.GgufTokenizerMetadata;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes a Qwen3.5 (dense, {@code qwen35}) or Qwen3.5-MoE ({@code qwen35moe}) Hugging Face folder as llama.cpp's
 * converter ({@code conversion/qwen.py}: Qwen3_5TextModel / Qwen3_5MoeTextModel over _LinearAttentionVReorderBase
 * and Qwen3NextModel, with gguf-py's tensor names) writes it. An independent mapping for tests: it shares nothing
 * with Forkpoint's loader but the GGUF writer, the safetensors reader and the converter's tokenizer metadata.
 *
 * <ul>
 * <li>{@code text_config} is merged into the root hyper-parameters (TextModel.__init__); the vision tower and MTP
 *     tensors are not written (the tiny models have neither).</li>
 * <li>{@code *norm.weight} except {@code linear_attn.norm.weight} hold 1 + w; {@code ssm_a} (no suffix) holds
 *     −exp(A_log); {@code dt_bias} becomes {@code ssm_dt.bias}; conv1d is squeezed to [C, K] (GGML {K, C}).</li>
 * <li>With more value than key heads, the value heads go from grouped order (key head k's r values together) to
 *     tiled (value m of every key head together): the V rows of in_proj_qkv, the rows of in_proj_z, in_proj_a,
 *     in_proj_b, A_log and dt_bias, the V channels of conv1d, the columns of out_proj.</li>
 * <li>attention's q_proj stays fused with its output gate ({@code attn_q}, per head [q, gate]).</li>
 * <li>{@code mlp.experts.gate_up_proj} [E, 2I, H] is split into gate rows [:I] and up rows [I:];
 *     {@code mlp.experts.down_proj} [E, H, I] is kept; {@code shared_expert_gate} [1, H] is squeezed.</li>
 * </ul>
 * Types: F32 everywhere, or (llama.cpp's {@code --outtype q8_0}) Q8_0 for matrices but the router and the
 * convolution, F16 for a matrix whose rows do not divide into 32-value blocks, F32 for 1-D tensors.
 */
public final class LlamaCppQwen35Gguf {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");

    private LlamaCppQwen35Gguf() {}

    /** A tensor to write: GGUF name, row-major (PyTorch) shape, values. */
    private record Out(String name, long[] shape, float[] values) {}

    /** Writes {@code folder} as {@code target} (F32 or Q8_0), every tensor. */
    public static Path write(Path folder, Path target, GgmlType type) throws IOException {
        return write(folder, target, type, name -> true);
    }

    /** Writes {@code folder} as {@code target}, only the GGUF tensors {@code keep} accepts (to make broken files). */
    public static Path write(Path folder, Path target, GgmlType type, Predicate<String> keep) throws IOException {
        return write(folder, target, type, keep, true);
    }

    /**
     * Writes {@code folder} as {@code target}; {@code tiledValueHeads} false leaves the value heads in Hugging Face's
     * grouped order, a file llama.cpp never writes (to show that the reorder matters).
     */
    public static Path write(Path folder, Path target, GgmlType type, Predicate<String> keep, boolean tiledValueHeads) throws IOException {
        return write(folder, target, type, keep, tiledValueHeads, false);
    }

    /**
     * Writes the Qwen3.5-MoE {@code folder} as llama.cpp writes a Qwen3-Next ({@code qwen3next}): the same tensors
     * with the value heads in grouped order (its converter reorders Qwen3.5 only) and in_proj_b / in_proj_a as one
     * {@code ssm_ba} whose rows are grouped per key head, [b(r) a(r)] (the fused {@code in_proj_ba} kept as is).
     */
    public static Path writeQwen3Next(Path folder, Path target) throws IOException {
        return write(folder, target, GgmlType.F32, name -> true, false, true);
    }

    private static Path write(Path folder, Path target, GgmlType type, Predicate<String> keep, boolean tiledValueHeads,
                              boolean qwen3next) throws IOException {
        if (type != GgmlType.F32 && type != GgmlType.Q8_0) throw new IllegalArgumentException("F32 or Q8_0, not " + type);
        ObjectNode hp = hparams(folder);
        boolean moe = hp.hasNonNull("num_experts") || hp.hasNonNull("num_local_experts");
        String arch = qwen3next ? "qwen3next" : moe ? "qwen35moe" : "qwen35";
        int nk = hp.get("linear_num_key_heads").asInt(), nv = hp.get("linear_num_value_heads").asInt();
        int dk = hp.get("linear_key_head_dim").asInt(), dv = hp.get("linear_value_head_dim").asInt();

        List<Out> out = new ArrayList<>();
        try (SafetensorsShards st = SafetensorsShards.open(folder)) {
            for (SafetensorsTensor t : st.tensors()) {
                String hf = t.name();
                if (hf.startsWith("model.language_model.")) hf = "model." + hf.substring("model.language_model.".length());
                else if (hf.startsWith("language_model.")) hf = hf.substring("language_model.".length());
                if (hf.contains("visual.") || hf.contains("vision_") || hf.startsWith("mtp.")) continue;
                if (t.dtype() != SafetensorsDtype.F32) throw new IllegalArgumentException(t.name() + ": only F32 sources, found " + t.dtype());
                convert(hf, t.shape().clone(), t.data().toArray(F32_LE), nk, nv, dk, dv, tiledValueHeads, out);
            }
        }
        if (qwen3next) fuseBetaAlpha(out, nk, nv);
        out.sort(java.util.Comparator.comparing(LlamaCppQwen35Gguf::order));

        var w = new GgufWriter();
        String p = arch + ".";
        w.put("general.architecture", MetadataValue.of(arch));
        w.put("general.type", MetadataValue.of("model"));
        w.put("general.name", MetadataValue.of(folder.getFileName().toString()));
        int layers = hp.get("num_hidden_layers").asInt() + hp.path("mtp_num_hidden_layers").asInt(0);
        int headDim = hp.hasNonNull("head_dim") ? hp.get("head_dim").asInt() : hp.get("hidden_size").asInt() / hp.get("num_attention_heads").asInt();
        JsonNode rp = hp.path("rope_parameters");
        double theta = rp.hasNonNull("rope_theta") ? rp.get("rope_theta").asDouble() : hp.path("rope_theta").asDouble(10000.0);
        double partial = rp.hasNonNull("partial_rotary_factor") ? rp.get("partial_rotary_factor").asDouble() : hp.path("partial_rotary_factor").asDouble(0.25);
        w.put(p + "block_count", MetadataValue.ofU32(layers));
        w.put(p + "context_length", MetadataValue.ofU32(hp.get("max_position_embeddings").asInt()));
        w.put(p + "embedding_length", MetadataValue.ofU32(hp.get("hidden_size").asInt()));
        if (hp.hasNonNull("intermediate_size")) w.put(p + "feed_forward_length", MetadataValue.ofU32(hp.get("intermediate_size").asInt()));
        w.put(p + "attention.head_count", MetadataValue.ofU32(hp.get("num_attention_heads").asInt()));
        w.put(p + "attention.head_count_kv", MetadataValue.ofU32(hp.get("num_key_value_heads").asInt()));
        w.put(p + "rope.freq_base", MetadataValue.ofF32(theta));
        w.put(p + "attention.layer_norm_rms_epsilon", MetadataValue.ofF32(hp.get("rms_norm_eps").asDouble()));
        if (moe) {
            w.put(p + "expert_count", MetadataValue.ofU32(hp.has("num_experts") ? hp.get("num_experts").asInt() : hp.get("num_local_experts").asInt()));
            w.put(p + "expert_used_count", MetadataValue.ofU32(hp.get("num_experts_per_tok").asInt()));
        }
        w.put(p + "attention.key_length", MetadataValue.ofU32(headDim));
        w.put(p + "attention.value_length", MetadataValue.ofU32(headDim));
        w.put("general.file_type", MetadataValue.ofU32(type == GgmlType.F32 ? 0 : 7));
        if (moe) {
            w.put(p + "expert_feed_forward_length", MetadataValue.ofU32(hp.get("moe_intermediate_size").asInt()));
            if (hp.hasNonNull("shared_expert_intermediate_size")) {
                w.put(p + "expert_shared_feed_forward_length", MetadataValue.ofU32(hp.get("shared_expert_intermediate_size").asInt()));
            }
        }
        w.put(p + "ssm.conv_kernel", MetadataValue.ofU32(hp.get("linear_conv_kernel_dim").asInt()));
        w.put(p + "ssm.state_size", MetadataValue.ofU32(dk));
        w.put(p + "ssm.group_count", MetadataValue.ofU32(nk));
        w.put(p + "ssm.time_step_rank", MetadataValue.ofU32(nv));
        w.put(p + "ssm.inner_size", MetadataValue.ofU32((long) dv * nv));
        w.put(p + "full_attention_interval", MetadataValue.ofU32(hp.path("full_attention_interval").asInt(4)));
        w.put(p + "rope.dimension_count", MetadataValue.ofU32((int) (headDim * partial)));
        int[] sections = new int[4];
        JsonNode ms = rp.path("mrope_section");
        if (ms.isArray()) for (int i = 0; i < Math.min(4, ms.size()); i++) sections[i] = ms.get(i).asInt();
        else sections = new int[] {11, 11, 10, 0};
        w.put(p + "rope.dimension_sections", MetadataValue.ofI32s(sections));
        if (type != GgmlType.F32) w.put("general.quantization_version", MetadataValue.ofU32(2));
        List<Integer> eos = new ArrayList<>();
        JsonNode e = hp.get("eos_token_id");
        if (e != null && e.isIntegralNumber()) eos.add(e.asInt());
        else if (e != null && e.isArray()) e.forEach(x -> eos.add(x.asInt()));
        int bos = hp.path("bos_token_id").isIntegralNumber() ? hp.get("bos_token_id").asInt() : -1;
        w.putAll(GgufTokenizerMetadata.fromFolder(folder, hp.get("vocab_size").asInt(), bos, eos));

        try (Arena arena = Arena.ofConfined()) {
            for (Out o : out) {
                if (!keep.test(o.name)) continue;
                GgmlType t = typeOf(o, type);
                long[] ggml = new long[o.shape.length];
                for (int i = 0; i < ggml.length; i++) ggml[i] = o.shape[o.shape.length - 1 - i];
                MemorySegment data = arena.allocate(t.bytesFor(o.values.length));
                Quantization.quantize(t, o.values, 0, o.values.length, data, 0);
                w.add(new GgufWriter.TensorData(o.name, t, ggml, data));
            }
            w.write(target);
        }
        return target;
    }

    /** llama.cpp's choice for {@code --outtype q8_0}: see the class comment. */
    private static GgmlType typeOf(Out o, GgmlType target) {
        if (target == GgmlType.F32 || o.shape.length < 2) return GgmlType.F32;
        if (o.name.endsWith("_norm.weight") || o.name.endsWith("ffn_gate_inp.weight") || o.name.endsWith("ssm_conv1d.weight")) return GgmlType.F32;
        return o.shape[o.shape.length - 1] % target.blockSize() == 0 ? target : GgmlType.F16;
    }

    /** config.json with text_config's fields over the root's (llama.cpp's TextModel). */
    private static ObjectNode hparams(Path folder) throws IOException {
        ObjectNode root = (ObjectNode) new ObjectMapper().readTree(folder.resolve("config.json").toFile());
        if (root.get("text_config") instanceof ObjectNode text) root.setAll(text);
        return root;
    }

    /** Converts one Hugging Face tensor (name without the language model's prefix) into its GGUF tensors. */
    private static void convert(String hf, long[] shape, float[] v, int nk, int nv, int dk, int dv, boolean tiled, List<Out> out) {
        switch (hf) {
            case "model.embed_tokens.weight" -> { out.add(new Out("token_embd.weight", shape, v)); return; }
            case "model.norm.weight" -> { out.add(new Out("output_norm.weight", shape, plusOne(v))); return; }
            case "lm_head.weight" -> { out.add(new Out("output.weight", shape, v)); return; }
            default -> {}
        }
        Matcher m = LAYER.matcher(hf);
        if (!m.matches()) throw new IllegalArgumentException("unmapped tensor " + hf);
        String b = "blk." + m.group(1) + ".", rest = m.group(2);
        int r = nv / nk;
        boolean reorder = tiled && nk != nv;
        int qk = 2 * nk * dk;   // in_proj_qkv's / conv1d's q and k rows, before the value rows
        switch (rest) {
            case "input_layernorm.weight" -> out.add(new Out(b + "attn_norm.weight", shape, plusOne(v)));
            case "post_attention_layernorm.weight" -> out.add(new Out(b + "post_attention_norm.weight", shape, plusOne(v)));
            case "self_attn.q_proj.weight" -> out.add(new Out(b + "attn_q.weight", shape, v));
            case "self_attn.k_proj.weight" -> out.add(new Out(b + "attn_k.weight", shape, v));
            case "self_attn.v_proj.weight" -> out.add(new Out(b + "attn_v.weight", shape, v));
            case "self_attn.o_proj.weight" -> out.add(new Out(b + "attn_output.weight", shape, v));
            case "self_attn.q_norm.weight" -> out.add(new Out(b + "attn_q_norm.weight", shape, plusOne(v)));
            case "self_attn.k_norm.weight" -> out.add(new Out(b + "attn_k_norm.weight", shape, plusOne(v)));
            case "linear_attn.in_proj_qkv.weight" ->
                    out.add(new Out(b + "attn_qkv.weight", shape, reorder ? tiledRows(v, (int) shape[1], qk, nk, r, dv) : v));
            case "linear_attn.in_proj_z.weight" ->
                    out.add(new Out(b + "attn_gate.weight", shape, reorder ? tiledRows(v, (int) shape[1], 0, nk, r, dv) : v));
            case "linear_attn.in_proj_b.weight" ->
                    out.add(new Out(b + "ssm_beta.weight", shape, reorder ? tiledRows(v, (int) shape[1], 0, nk, r, 1) : v));
            case "linear_attn.in_proj_a.weight" ->
                    out.add(new Out(b + "ssm_alpha.weight", shape, reorder ? tiledRows(v, (int) shape[1], 0, nk, r, 1) : v));
            case "linear_attn.conv1d.weight" -> {   // [C, 1, K] squeezed to [C, K]
                long[] sq = {shape[0], shape[2]};
                out.add(new Out(b + "ssm_conv1d.weight", sq, reorder ? tiledRows(v, (int) shape[2], qk, nk, r, dv) : v));
            }
            case "linear_attn.dt_bias" -> out.add(new Out(b + "ssm_dt.bias", shape, reorder ? tiledRows(v, 1, 0, nk, r, 1) : v));
            case "linear_attn.A_log" -> {
                float[] a = reorder ? tiledRows(v, 1, 0, nk, r, 1) : v.clone();
                for (int i = 0; i < a.length; i++) a[i] = (float) -Math.exp(a[i]);
                out.add(new Out(b + "ssm_a", shape, a));
            }
            case "linear_attn.norm.weight" -> out.add(new Out(b + "ssm_norm.weight", shape, v));   // not shifted
            case "linear_attn.out_proj.weight" ->
                    out.add(new Out(b + "ssm_out.weight", shape, reorder ? tiledColumns(v, (int) shape[0], (int) shape[1], nk, r, dv) : v));
            case "mlp.gate_proj.weight" -> out.add(new Out(b + "ffn_gate.weight", shape, v));
            case "mlp.up_proj.weight" -> out.add(new Out(b + "ffn_up.weight", shape, v));
            case "mlp.down_proj.weight" -> out.add(new Out(b + "ffn_down.weight", shape, v));
            case "mlp.gate.weight" -> out.add(new Out(b + "ffn_gate_inp.weight", shape, v));
            case "mlp.experts.gate_up_proj" -> {   // [E, 2I, H]: gate = rows [:I], up = rows [I:]
                int e = (int) shape[0], i2 = (int) shape[1], h = (int) shape[2], i = i2 / 2;
                float[] gate = new float[e * i * h], up = new float[e * i * h];
                for (int x = 0; x < e; x++) {
                    System.arraycopy(v, x * i2 * h, gate, x * i * h, i * h);
                    System.arraycopy(v, x * i2 * h + i * h, up, x * i * h, i * h);
                }
                out.add(new Out(b + "ffn_gate_exps.weight", new long[] {e, i, h}, gate));
                out.add(new Out(b + "ffn_up_exps.weight", new long[] {e, i, h}, up));
            }
            case "mlp.experts.down_proj" -> out.add(new Out(b + "ffn_down_exps.weight", shape, v));
            case "mlp.shared_expert.gate_proj.weight" -> out.add(new Out(b + "ffn_gate_shexp.weight", shape, v));
            case "mlp.shared_expert.up_proj.weight" -> out.add(new Out(b + "ffn_up_shexp.weight", shape, v));
            case "mlp.shared_expert.down_proj.weight" -> out.add(new Out(b + "ffn_down_shexp.weight", shape, v));
            case "mlp.shared_expert_gate.weight" -> out.add(new Out(b + "ffn_gate_inp_shexp.weight", new long[] {shape[shape.length - 1]}, v));
            default -> throw new IllegalArgumentException("unmapped tensor " + hf);
        }
    }

    /** Replaces each layer's ssm_beta and ssm_alpha ([Hv, H] each) by ssm_ba: per key head its r b rows, then its r a rows. */
    private static void fuseBetaAlpha(List<Out> out, int nk, int nv) {
        int r = nv / nk;
        java.util.Map<String, Out> beta = new java.util.HashMap<>(), alpha = new java.util.HashMap<>();
        for (Out o : out) {
            if (o.name.endsWith(".ssm_beta.weight")) beta.put(o.name.substring(0, o.name.length() - ".ssm_beta.weight".length()), o);
            if (o.name.endsWith(".ssm_alpha.weight")) alpha.put(o.name.substring(0, o.name.length() - ".ssm_alpha.weight".length()), o);
        }
        out.removeIf(o -> o.name.endsWith(".ssm_beta.weight") || o.name.endsWith(".ssm_alpha.weight"));
        for (var e : beta.entrySet()) {
            Out b = e.getValue(), a = alpha.get(e.getKey());
            int h = (int) b.shape[1];
            float[] ba = new float[2 * nv * h];
            for (int k = 0; k < nk; k++) {
                System.arraycopy(b.values, k * r * h, ba, (k * 2 * r) * h, r * h);
                System.arraycopy(a.values, k * r * h, ba, (k * 2 * r + r) * h, r * h);
            }
            out.add(new Out(e.getKey() + ".ssm_ba.weight", new long[] {2L * nv, h}, ba));
        }
        out.sort(java.util.Comparator.comparing(LlamaCppQwen35Gguf::order));
    }

    private static float[] plusOne(float[] v) {
        float[] o = v.clone();
        for (int i = 0; i < o.length; i++) o[i] += 1f;
        return o;
    }

    /**
     * The rows (of {@code rowLength} values) from {@code start} on, nk·r·hd of them, reshaped (nk, r, hd) → (r, nk, hd):
     * tiled row (m, k, d) is grouped row (k, m, d). Rows before {@code start} are kept.
     */
    static float[] tiledRows(float[] v, int rowLength, int start, int nk, int r, int hd) {
        float[] o = v.clone();
        for (int k = 0; k < nk; k++) {
            for (int m = 0; m < r; m++) {
                for (int d = 0; d < hd; d++) {
                    int grouped = start + (k * r + m) * hd + d, tiled = start + (m * nk + k) * hd + d;
                    System.arraycopy(v, grouped * rowLength, o, tiled * rowLength, rowLength);
                }
            }
        }
        return o;
    }

    /** The same reorder on the columns of a [rows, cols] matrix. */
    static float[] tiledColumns(float[] v, int rows, int cols, int nk, int r, int hd) {
        float[] o = new float[v.length];
        for (int row = 0; row < rows; row++) {
            for (int k = 0; k < nk; k++) {
                for (int m = 0; m < r; m++) {
                    for (int d = 0; d < hd; d++) {
                        o[row * cols + (m * nk + k) * hd + d] = v[row * cols + (k * r + m) * hd + d];
                    }
                }
            }
        }
        return o;
    }

    /** llama.cpp's tensor order: global tensors first, then by layer (numerically), source order within a layer. */
    private static long order(Out o) {
        if (o.name.equals("token_embd.weight")) return -3;
        if (o.name.startsWith("blk.")) {
            int layer = Integer.parseInt(o.name.substring(4, o.name.indexOf('.', 4)));
            return (long) layer << 8;
        }
        return Long.MAX_VALUE - (o.name.equals("output.weight") ? 0 : 1);
    }
}
