package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.format.hf.HfTensorNames;
import dev.forkpoint.model.Experts;
import dev.forkpoint.model.LinearAttention;
import dev.forkpoint.model.ModelConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Qwen3.5 hybrid's config.json ({@code qwen3_5}, {@code qwen3_5_moe}: Gated DeltaNet and gated attention layers,
 * dense or mixture-of-experts feed-forwards) as the converter needs it: the language model's sizes, as the loader reads them
 * ({@code text_config}, or the top level when there is none, as mlx-lm allows), to check every weight's shape; and
 * the source JSON itself, which an MLX folder keeps unchanged but for the {@code quantization} block.
 *
 * <p>Names are compared in a canonical form ({@link HfTensorNames#canonical}): the language model's prefixes of a vision-language
 * checkpoint ({@code model.language_model.}, mlx-lm's {@code language_model.model.}) become {@code model.}.
 *
 * @param source the config.json as read (never modified)
 */
record HybridConfig(ObjectNode source, boolean moe, int hidden, int layers, int heads, int kvHeads, int headDim,
                    boolean attentionGate, int intermediate, int vocab, int keyHeads, int valueHeads, int keyDim,
                    int valueDim, int convKernel, boolean[] linear, int experts, int expertIntermediate, int sharedIntermediate,
                    boolean tied) {

    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");

    /** mlx-lm's module path for a module named {@code module} in the folder ({@code language_model.model.…}). */
    static String mlxLmPath(String module) {
        String c = HfTensorNames.canonical(module);
        if (c.startsWith("model.")) return "language_model." + c;
        if (c.equals("lm_head") || c.startsWith("lm_head.")) return "language_model." + c;
        return c;
    }

    /** Tensors that are not the language model's: the vision tower and the multi-token-prediction head. */
    static boolean ignored(String name) {
        return name.startsWith("model.visual.") || name.startsWith("visual.") || name.startsWith("vision_tower.")
                || name.startsWith("mtp.") || name.startsWith("model.mtp.");
    }

    /**
     * The hybrid's sizes as the loader read them ({@link ModelConfig#fromHf}) from config.json, whose JSON
     * {@code root} is kept as the source to carry over.
     */
    static HybridConfig of(ObjectNode root, ModelConfig c, boolean tied) {
        LinearAttention l = c.linear();
        Experts e = c.experts();
        boolean moe = e != null;
        return new HybridConfig(root.deepCopy(), moe, c.dim(), c.layers(), c.heads(), c.kvHeads(), c.headDim(),
                c.gatedAttention(), moe ? 0 : c.ffnDim(), c.vocabSize(), l.keyHeads(), l.valueHeads(), l.keyDim(), l.valueDim(),
                l.convKernel(), l.linearLayers().clone(), moe ? e.count() : 0, moe ? e.ffnDim() : 0, moe ? e.sharedFfnDim() : 0, tied);
    }

    /** The source config.json with {@code quantization} (and mlx-lm's copy {@code quantization_config}) when non-null. */
    ObjectNode toJson(ObjectNode quantization) {
        ObjectNode o = source.deepCopy();
        o.remove("quantization");
        o.remove("quantization_config");
        return ConfigJson.withQuantization(o, quantization);
    }

    private int convChannels() { return 2 * keyHeads * keyDim + valueHeads * valueDim; }

    /**
     * The shapes config.json allows for a weight (several where layouts differ: the convolution is [C, 1, K] in
     * Hugging Face checkpoints, [C, K, 1] in mlx-lm's), or an empty list for names it says nothing about.
     */
    List<long[]> allowedShapes(String name) {
        String n = HfTensorNames.canonical(name);
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
