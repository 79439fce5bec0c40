package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.format.ModelFormatException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Qwen3.5 hybrid's config.json ({@code qwen3_5}, {@code qwen3_5_moe}: Gated DeltaNet and gated attention layers,
 * dense or mixture-of-experts feed-forwards) as the converter needs it: the language model's sizes, read from
 * {@code text_config} (or the top level when there is none, as mlx-lm allows), to check every weight's shape; and
 * the source JSON itself, which an MLX folder keeps unchanged but for the {@code quantization} block.
 *
 * <p>Names are compared in a canonical form ({@link #canonical}): the language model's prefixes of a vision-language
 * checkpoint ({@code model.language_model.}, mlx-lm's {@code language_model.model.}) become {@code model.}.
 *
 * @param source the config.json as read (never modified)
 */
record HybridConfig(ObjectNode source, boolean moe, int hidden, int layers, int heads, int kvHeads, int headDim,
                    boolean attentionGate, int intermediate, int vocab, int keyHeads, int valueHeads, int keyDim,
                    int valueDim, int convKernel, boolean[] linear, int experts, int expertIntermediate, int sharedIntermediate,
                    boolean tied) {

    /** Prefixes of the language model inside a vision-language checkpoint (HF, mlx-lm) and what they stand for. */
    private static final String[][] PREFIXES = {
            {"model.language_model.", "model."},
            {"language_model.model.", "model."},
            {"language_model.lm_head.", "lm_head."},
    };
    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");

    /** The name with the language model's prefix replaced by {@code model.} ({@code lm_head.} for the output). */
    static String canonical(String name) {
        for (String[] p : PREFIXES) if (name.startsWith(p[0])) return p[1] + name.substring(p[0].length());
        return name;
    }

    /** mlx-lm's module path for a module named {@code module} in the folder ({@code language_model.model.…}). */
    static String mlxLmPath(String module) {
        String c = canonical(module);
        if (c.startsWith("model.")) return "language_model." + c;
        if (c.equals("lm_head") || c.startsWith("lm_head.")) return "language_model." + c;
        return c;
    }

    /** Tensors that are not the language model's: the vision tower and the multi-token-prediction head. */
    static boolean ignored(String name) {
        return name.startsWith("model.visual.") || name.startsWith("visual.") || name.startsWith("vision_tower.")
                || name.startsWith("mtp.") || name.startsWith("model.mtp.");
    }

    /** Reads the hybrid's sizes from {@code root} (config.json at {@code file}); errors name the file and the field. */
    static HybridConfig read(Path file, ObjectNode root, String modelType) {
        JsonNode tc = root.get("text_config");
        String p;
        JsonNode o;
        if (tc == null || tc.isNull()) {
            o = root;
            p = "";
        } else if (!tc.isObject()) {
            throw new ModelFormatException(file, "text_config", "must be a JSON object, found " + tc);
        } else {
            o = tc;
            p = "text_config.";
        }
        boolean moe = modelType.equals("qwen3_5_moe");
        int hidden = positive(file, o, p, "hidden_size", null);
        int layers = positive(file, o, p, "num_hidden_layers", null);
        int heads = positive(file, o, p, "num_attention_heads", null);
        int kvHeads = positive(file, o, p, "num_key_value_heads", heads);
        if (heads % kvHeads != 0) {
            throw new ModelFormatException(file, p + "num_key_value_heads", "num_attention_heads " + heads + " is not a multiple of " + kvHeads);
        }
        int headDim = positive(file, o, p, "head_dim", hidden / heads);
        int keyHeads = positive(file, o, p, "linear_num_key_heads", null);
        int valueHeads = positive(file, o, p, "linear_num_value_heads", null);
        if (valueHeads % keyHeads != 0) {
            throw new ModelFormatException(file, p + "linear_num_value_heads", valueHeads + " is not a multiple of linear_num_key_heads " + keyHeads);
        }
        int keyDim = positive(file, o, p, "linear_key_head_dim", null);
        int valueDim = positive(file, o, p, "linear_value_head_dim", null);
        int kernel = positive(file, o, p, "linear_conv_kernel_dim", 4);
        boolean[] linear = new boolean[layers];
        JsonNode types = o.get("layer_types");
        if (types != null && !types.isNull()) {
            if (!types.isArray() || types.size() != layers) {
                throw new ModelFormatException(file, p + "layer_types", "must be an array of " + layers + " layer types (num_hidden_layers), found " + types);
            }
            for (int i = 0; i < layers; i++) {
                String t = types.get(i).asText("");
                if (!t.equals("linear_attention") && !t.equals("full_attention")) {
                    throw new ModelFormatException(file, p + "layer_types[" + i + "]", "'" + t + "' is neither linear_attention nor full_attention");
                }
                linear[i] = t.equals("linear_attention");
            }
        } else {
            int interval = positive(file, o, p, "full_attention_interval", 4);
            for (int i = 0; i < layers; i++) linear[i] = (i + 1) % interval != 0;
        }
        int intermediate = moe ? 0 : positive(file, o, p, "intermediate_size", null);
        int experts = moe ? positive(file, o, p, "num_experts", null) : 0;
        int expertIntermediate = moe ? positive(file, o, p, "moe_intermediate_size", null) : 0;
        int shared = moe ? positive(file, o, p, "shared_expert_intermediate_size", 0) : 0;
        boolean tied = root.has("tie_word_embeddings") ? root.get("tie_word_embeddings").asBoolean(false)
                : o.path("tie_word_embeddings").asBoolean(false);
        return new HybridConfig(root.deepCopy(), moe, hidden, layers, heads, kvHeads, headDim,
                o.path("attn_output_gate").asBoolean(true), intermediate, positive(file, o, p, "vocab_size", null),
                keyHeads, valueHeads, keyDim, valueDim, kernel, linear, experts, expertIntermediate, shared, tied);
    }

    private static int positive(Path file, JsonNode o, String prefix, String field, Integer fallback) {
        JsonNode v = o.get(field);
        if ((v == null || v.isNull()) && fallback != null) return fallback;
        if (v == null || !v.isIntegralNumber() || v.asLong() <= 0 || v.asLong() > Integer.MAX_VALUE) {
            throw new ModelFormatException(file, prefix + field, "must be a positive integer, found " + v);
        }
        return v.asInt();
    }

    /** The source config.json with {@code quantization} (and mlx-lm's copy {@code quantization_config}) when non-null. */
    ObjectNode toJson(ObjectNode quantization) {
        ObjectNode o = source.deepCopy();
        o.remove("quantization");
        o.remove("quantization_config");
        if (quantization != null) {
            o.set("quantization", quantization);
            o.set("quantization_config", quantization.deepCopy());
        }
        return o;
    }

    private int convChannels() { return 2 * keyHeads * keyDim + valueHeads * valueDim; }

    /**
     * The shapes config.json allows for a weight (several where layouts differ: the convolution is [C, 1, K] in
     * Hugging Face checkpoints, [C, K, 1] in mlx-lm's), or an empty list for names it says nothing about.
     */
    List<long[]> allowedShapes(String name) {
        String n = canonical(name);
        long h = hidden;
        switch (n) {
            case "model.embed_tokens.weight", "lm_head.weight" -> { return List.<long[]>of(new long[]{vocab, h}); }
            case "model.norm.weight" -> { return List.<long[]>of(new long[]{h}); }
            default -> { }
        }
        Matcher m = LAYER.matcher(n);
        if (!m.matches()) return List.of();
        int layer = Integer.parseInt(m.group(1));
        if (layer >= layers) return List.of();
        long q = (long) heads * headDim, kv = (long) kvHeads * headDim, c = convChannels(), v = (long) valueHeads * valueDim;
        long e = experts, ei = expertIntermediate, si = sharedIntermediate;
        long[] shape = switch (m.group(2)) {
            case "input_layernorm.weight", "post_attention_layernorm.weight" -> new long[]{h};
            case "linear_attn.in_proj_qkv.weight" -> new long[]{c, h};
            case "linear_attn.in_proj_z.weight" -> new long[]{v, h};
            case "linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight" -> new long[]{valueHeads, h};
            case "linear_attn.A_log", "linear_attn.dt_bias" -> new long[]{valueHeads};
            case "linear_attn.norm.weight" -> new long[]{valueDim};
            case "linear_attn.out_proj.weight" -> new long[]{h, v};
            case "linear_attn.conv1d.weight" -> null;
            case "self_attn.q_proj.weight" -> new long[]{attentionGate ? 2 * q : q, h};
            case "self_attn.k_proj.weight", "self_attn.v_proj.weight" -> new long[]{kv, h};
            case "self_attn.o_proj.weight" -> new long[]{h, q};
            case "self_attn.q_norm.weight", "self_attn.k_norm.weight" -> new long[]{headDim};
            case "mlp.gate_proj.weight", "mlp.up_proj.weight" -> moe ? new long[0] : new long[]{intermediate, h};
            case "mlp.down_proj.weight" -> moe ? new long[0] : new long[]{h, intermediate};
            case "mlp.gate.weight" -> new long[]{e, h};
            case "mlp.experts.gate_up_proj" -> new long[]{e, 2 * ei, h};
            case "mlp.experts.down_proj", "mlp.switch_mlp.down_proj.weight" -> new long[]{e, h, ei};
            case "mlp.switch_mlp.gate_proj.weight", "mlp.switch_mlp.up_proj.weight" -> new long[]{e, ei, h};
            case "mlp.shared_expert.gate_proj.weight", "mlp.shared_expert.up_proj.weight" -> new long[]{si, h};
            case "mlp.shared_expert.down_proj.weight" -> new long[]{h, si};
            case "mlp.shared_expert_gate.weight" -> new long[]{1, h};
            default -> new long[0];
        };
        if (shape == null) return List.of(new long[]{c, 1, convKernel}, new long[]{c, convKernel, 1});
        if (shape.length == 0) return List.of();   // a name config.json says nothing about: copied unchecked
        return List.of(shape);
    }

    /**
     * The first weight the model needs that {@code present} (canonical names) lacks, described for a message, or
     * null when none is missing. Stacked experts may be Hugging Face's fused {@code experts.gate_up_proj} or mlx-lm's
     * {@code switch_mlp.*}.
     */
    String missing(Set<String> present) {
        List<String> need = new ArrayList<>(List.of("model.embed_tokens.weight", "model.norm.weight"));
        if (!tied) need.add("lm_head.weight");
        for (String n : need) if (!present.contains(n)) return n;
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            List<String> layer = new ArrayList<>(List.of("input_layernorm.weight", "post_attention_layernorm.weight"));
            if (linear[l]) {
                layer.addAll(List.of("linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_z.weight", "linear_attn.in_proj_b.weight",
                        "linear_attn.in_proj_a.weight", "linear_attn.conv1d.weight", "linear_attn.A_log", "linear_attn.dt_bias",
                        "linear_attn.norm.weight", "linear_attn.out_proj.weight"));
            } else {
                layer.addAll(List.of("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                        "self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight"));
            }
            if (moe) {
                layer.add("mlp.gate.weight");
                if (sharedIntermediate > 0) {
                    layer.addAll(List.of("mlp.shared_expert.gate_proj.weight", "mlp.shared_expert.up_proj.weight",
                            "mlp.shared_expert.down_proj.weight", "mlp.shared_expert_gate.weight"));
                }
            } else {
                layer.addAll(List.of("mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"));
            }
            for (String s : layer) if (!present.contains(p + s)) return p + s;
            if (moe) {
                boolean fused = present.contains(p + "mlp.experts.gate_up_proj") && present.contains(p + "mlp.experts.down_proj");
                boolean switched = present.contains(p + "mlp.switch_mlp.gate_proj.weight") && present.contains(p + "mlp.switch_mlp.up_proj.weight")
                        && present.contains(p + "mlp.switch_mlp.down_proj.weight");
                if (!fused && !switched) return p + "mlp.experts.gate_up_proj and " + p + "mlp.experts.down_proj (or mlx-lm's " + p + "mlp.switch_mlp.*)";
            }
        }
        return null;
    }
}
