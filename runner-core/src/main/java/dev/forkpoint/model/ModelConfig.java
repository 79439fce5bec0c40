package dev.forkpoint.model;

import dev.forkpoint.backend.Rope;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The hyper-parameters of a decoder-only transformer, read from GGUF metadata under the architecture's prefix
 * ({@code llama.embedding_length}, …) or from a Hugging Face config.json.
 *
 * @param linear         the Gated DeltaNet layers of a hybrid model, or null when every layer is attention
 * @param experts        the mixture-of-experts feed-forward, or null when every layer is dense
 * @param gatedAttention whether attention's q projection carries a per-head output gate (Qwen3.5, Qwen3-Next)
 */
public record ModelConfig(String architecture, int dim, int layers, int heads, int kvHeads, int headDim,
                          int ffnDim, int vocabSize, int contextLength, float rmsEps, Rope rope,
                          LinearAttention linear, Experts experts, boolean gatedAttention) {

    /** A dense, attention-only model's parameters. */
    public ModelConfig(String architecture, int dim, int layers, int heads, int kvHeads, int headDim, int ffnDim,
                       int vocabSize, int contextLength, float rmsEps, Rope rope) {
        this(architecture, dim, layers, heads, kvHeads, headDim, ffnDim, vocabSize, contextLength, rmsEps, rope, null, null, false);
    }

    /** Layers that keep KV (full attention): all but the linear ones. */
    public int kvLayers() { return linear == null ? layers : layers - linear.linearCount(); }

    /** Whether layer {@code layer} is linear attention. */
    public boolean isLinear(int layer) { return linear != null && linear.isLinear(layer); }

    /** The KV (attention) layer index of attention layer {@code layer}. */
    public int kvLayer(int layer) { return linear == null ? layer : linear.indexAmongKind(layer); }

    /**
     * The hyper-parameters in a GGUF file's metadata under {@code spec}'s name; the spec says whether the layers are
     * a hybrid's ({@link Architecture.Spec#hybrid()}) and how the file's RoPE pairs dimensions.
     */
    public static ModelConfig fromGguf(GgufFile f, Architecture.Spec spec) {
        String arch = spec.name();
        String p = arch + ".";
        int dim = positive(f, p + "embedding_length", f.getInt(p + "embedding_length"));
        int layers = positive(f, p + "block_count", f.getInt(p + "block_count"));
        // llama.cpp counts Qwen3.5's multi-token-prediction layers in block_count (they come last); they are not run
        int mtp = f.getInt(p + "nextn_predict_layers", 0);
        if (mtp < 0 || mtp >= layers) throw new ModelFormatException(f.path(), "metadata " + p + "nextn_predict_layers", "must be in [0, block_count " + layers + "), found " + mtp);
        layers -= mtp;
        int heads = positive(f, p + "attention.head_count", f.getInt(p + "attention.head_count"));
        int kvHeads = positive(f, p + "attention.head_count_kv", f.getInt(p + "attention.head_count_kv", heads));
        if (heads % kvHeads != 0) {
            throw new ModelFormatException(f.path(), "metadata " + p + "attention.head_count_kv",
                    "head_count " + heads + " is not a multiple of head_count_kv " + kvHeads);
        }
        int headDim = positive(f, p + "attention.key_length", f.getInt(p + "attention.key_length", dim / heads));
        boolean sparse = f.has(p + "expert_count");
        int ffn = sparse && !f.has(p + "feed_forward_length") ? 0 : f.getInt(p + "feed_forward_length");
        if (!sparse || ffn != 0) positive(f, p + "feed_forward_length", ffn);
        GgufTensor embd = f.tensor("token_embd.weight");
        int vocab = f.getInt(p + "vocab_size", embd.rows());
        int ctx = positive(f, p + "context_length", f.getInt(p + "context_length", 2048));
        float eps = (float) f.getDouble(p + "attention.layer_norm_rms_epsilon", 1e-5);
        if (!(eps > 0 && Float.isFinite(eps))) {
            throw new ModelFormatException(f.path(), "metadata " + p + "attention.layer_norm_rms_epsilon", "must be a positive finite float32, found " + eps);
        }
        int ropeDims = positive(f, p + "rope.dimension_count", f.getInt(p + "rope.dimension_count", headDim));
        if (ropeDims > headDim || ropeDims % 2 != 0) {
            throw new ModelFormatException(f.path(), "metadata " + p + "rope.dimension_count", "must be even and at most the head size " + headDim + ", found " + ropeDims);
        }
        double base = f.getDouble(p + "rope.freq_base", 10000.0);
        if (!(base > 0 && Double.isFinite(base))) {
            throw new ModelFormatException(f.path(), "metadata " + p + "rope.freq_base", "must be a positive finite number, found " + base);
        }
        float[] factors = f.findTensor("rope_freqs.weight").map(t -> ropeFactors(f, t, ropeDims)).orElse(null);
        boolean hybrid = spec.hybrid();
        LinearAttention linear = null;
        if (hybrid) {
            int interval = positive(f, p + "full_attention_interval", f.getInt(p + "full_attention_interval", 4));
            boolean[] kinds = new boolean[layers];
            for (int i = 0; i < layers; i++) kinds[i] = (i + 1) % interval != 0;
            String recurrentKey = p + "attention.recurrent_layers";   // llama.cpp: when present, it wins
            if (f.has(recurrentKey)) {
                var values = f.getArray(recurrentKey).values();
                if (values.size() < layers) {
                    throw new ModelFormatException(f.path(), "metadata " + recurrentKey, values.size() + " entries for " + layers + " layers");
                }
                for (int i = 0; i < layers; i++) {
                    if (!(values.get(i) instanceof dev.forkpoint.format.gguf.MetadataValue.Bool b)) {
                        throw new ModelFormatException(f.path(), "metadata " + recurrentKey + "[" + i + "]", "must be a bool, found " + values.get(i));
                    }
                    kinds[i] = b.value();
                }
            }
            int hk = positive(f, p + "ssm.group_count", f.getInt(p + "ssm.group_count"));
            int hv = positive(f, p + "ssm.time_step_rank", f.getInt(p + "ssm.time_step_rank"));
            int dk = positive(f, p + "ssm.state_size", f.getInt(p + "ssm.state_size"));
            int inner = positive(f, p + "ssm.inner_size", f.getInt(p + "ssm.inner_size"));
            if (inner % hv != 0 || hv % hk != 0) {
                throw new ModelFormatException(f.path(), "metadata " + p + "ssm.inner_size", inner + " over " + hv + " value heads (ssm.time_step_rank) of "
                        + hk + " key heads (ssm.group_count) does not divide");
            }
            requireBothKinds(kinds, f.path(), "metadata " + (f.has(recurrentKey) ? recurrentKey : p + "full_attention_interval"));
            linear = new LinearAttention(hk, hv, dk, inner / hv, positive(f, p + "ssm.conv_kernel", f.getInt(p + "ssm.conv_kernel", 4)), kinds);
        }
        Experts experts = null;
        if (sparse) {
            int count = positive(f, p + "expert_count", f.getInt(p + "expert_count"));
            int used = positive(f, p + "expert_used_count", f.getInt(p + "expert_used_count"));
            if (used > count) throw new ModelFormatException(f.path(), "metadata " + p + "expert_used_count", used + " exceeds expert_count " + count);
            boolean[] all = new boolean[layers];
            java.util.Arrays.fill(all, true);
            int shared = f.getInt(p + "expert_shared_feed_forward_length", 0);
            if (shared < 0) throw new ModelFormatException(f.path(), "metadata " + p + "expert_shared_feed_forward_length", "must be >= 0, found " + shared);
            experts = new Experts(count, used, positive(f, p + "expert_feed_forward_length", f.getInt(p + "expert_feed_forward_length")),
                    shared, true, all);
        }
        return new ModelConfig(arch, dim, layers, heads, kvHeads, headDim, ffn, vocab, ctx, eps,
                new Rope(ropeDims, base, spec.ggufNeoxRope(), factors), linear, experts, hybrid);
    }

    /**
     * The hyper-parameters of a Hugging Face {@code config.json}. Hugging Face layouts rotate half-split (NeoX) pairs
     * for every architecture; {@code rope_scaling} becomes per-pair frequency divisors. The spec names the
     * architecture and says which keys it reads ({@link Architecture.Spec#hybrid()},
     * {@link Architecture.Spec#expertKeys()}).
     */
    public static ModelConfig fromHf(dev.forkpoint.format.hf.HfConfig c, Architecture.Spec spec) {
        var f = c.fields();
        String arch = spec.name();
        boolean hybrid = spec.hybrid();
        LinearAttention linear = hybrid ? linearAttention(f, c.layers()) : null;
        double partial = f.optionalNumber("rope_parameters.partial_rotary_factor")
                .or(() -> f.optionalNumber("partial_rotary_factor")).orElse(hybrid ? 0.25 : 1.0);
        int ropeDims = (int) (c.headDim() * partial);
        if (!(partial > 0 && partial <= 1) || ropeDims < 2 || ropeDims % 2 != 0) {
            throw new ModelFormatException(c.file(), f.prefix() + "rope_parameters.partial_rotary_factor", "must be in (0, 1] and give an even number of rotary dims of head_dim "
                    + c.headDim() + ", found " + partial);
        }
        Experts experts = experts(f, c, spec.expertKeys());
        if (experts == null && c.intermediateSize() <= 0) throw new ModelFormatException(c.file(), f.prefix() + "intermediate_size", "missing");
        return new ModelConfig(arch, c.hiddenSize(), c.layers(), c.heads(), c.kvHeads(), c.headDim(), c.intermediateSize(),
                c.vocabSize(), c.maxPositions(), (float) c.rmsEps(),
                new Rope(ropeDims, c.ropeTheta(), true, c.ropeFactors(ropeDims)), linear, experts,
                hybrid && f.bool("attn_output_gate", true));
    }

    /** A hybrid needs at least one linear and one attention layer (its state and its KV pool are sized by them). */
    private static void requireBothKinds(boolean[] linear, java.nio.file.Path file, String field) {
        int n = 0;
        for (boolean b : linear) if (b) n++;
        if (n == 0 || n == linear.length) {
            throw new ModelFormatException(file, field, "gives " + (n == 0 ? "no linear-attention" : "no full-attention")
                    + " layer among " + linear.length + "; a hybrid model has both");
        }
    }

    /** Layer kinds from {@code layer_types} or, without it, {@code full_attention_interval} (default 4), and the shape. */
    private static LinearAttention linearAttention(dev.forkpoint.format.hf.HfConfig.Fields f, int layers) {
        boolean[] linear = new boolean[layers];
        var types = f.strings("layer_types");
        if (types.isPresent()) {
            if (types.get().size() != layers) {
                throw new ModelFormatException(f.file(), f.prefix() + "layer_types", "has " + types.get().size() + " entries for num_hidden_layers " + layers);
            }
            for (int i = 0; i < layers; i++) {
                switch (types.get().get(i)) {
                    case "linear_attention" -> linear[i] = true;
                    case "full_attention" -> linear[i] = false;
                    default -> throw new ModelFormatException(f.file(), f.prefix() + "layer_types[" + i + "]", "\"" + types.get().get(i)
                            + "\" is not a layer type (linear_attention, full_attention)");
                }
            }
        } else {
            int interval = f.positive("full_attention_interval", 4);
            for (int i = 0; i < layers; i++) linear[i] = (i + 1) % interval != 0;
        }
        requireBothKinds(linear, f.file(), f.prefix() + (types.isPresent() ? "layer_types" : "full_attention_interval"));
        try {
            return new LinearAttention(f.positive("linear_num_key_heads", null), f.positive("linear_num_value_heads", null),
                    f.positive("linear_key_head_dim", null), f.positive("linear_value_head_dim", null),
                    f.positive("linear_conv_kernel_dim", 4), linear);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(f.file(), f.prefix() + "linear_num_value_heads", e.getMessage());
        }
    }

    /**
     * The experts from {@code num_experts} (null without it): every layer routing with fixed renormalisation, or by
     * {@code norm_topk_prob}, {@code decoder_sparse_step} and {@code mlp_only_layers}, as the architecture's
     * {@code keys} say.
     */
    private static Experts experts(dev.forkpoint.format.hf.HfConfig.Fields f, dev.forkpoint.format.hf.HfConfig c, ExpertKeys keys) {
        String countKey = f.node("num_experts") != null ? "num_experts" : "num_local_experts";
        if (f.node(countKey) == null) return null;
        int count = f.positive(countKey, null);
        int topK = f.positive("num_experts_per_tok", null);
        if (topK > count) throw new ModelFormatException(f.file(), f.prefix() + "num_experts_per_tok", topK + " exceeds " + countKey + " " + count);
        int ffn = f.positive("moe_intermediate_size", null);
        int shared = f.node("shared_expert_intermediate_size") == null ? 0 : f.positive("shared_expert_intermediate_size", null);
        boolean[] sparse = new boolean[c.layers()];
        boolean renormalize;
        if (keys.fixed()) {
            java.util.Arrays.fill(sparse, true);
            renormalize = keys.renormalize();
        } else {
            renormalize = f.bool("norm_topk_prob", keys.renormalize());
            int step = f.positive("decoder_sparse_step", 1);
            java.util.Set<Integer> dense = new java.util.HashSet<>();
            for (int l : f.ints("mlp_only_layers").orElse(new int[0])) dense.add(l);
            for (int i = 0; i < sparse.length; i++) sparse[i] = !dense.contains(i) && (i + 1) % step == 0;
            for (int i = 0; i < sparse.length; i++) {
                if (!sparse[i] && c.intermediateSize() <= 0) {
                    throw new ModelFormatException(f.file(), f.prefix() + "intermediate_size", "missing, and layer " + i + " is dense (mlp_only_layers / decoder_sparse_step)");
                }
            }
        }
        return new Experts(count, topK, ffn, shared, renormalize, sparse);
    }

    private static float[] ropeFactors(GgufFile f, GgufTensor t, int ropeDims) {
        if (t.type() != GgmlType.F32 || t.elementCount() != ropeDims / 2) {
            throw new ModelFormatException(f.path(), "tensor rope_freqs.weight", "expected F32 [" + ropeDims / 2 + "], found " + t.type() + " " + t.shapeString());
        }
        return t.data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
    }

    private static int positive(GgufFile f, String key, int v) {
        if (v <= 0) throw new ModelFormatException(f.path(), "metadata " + key, "must be positive, found " + v);
        return v;
    }

    public int kvDim() { return kvHeads * headDim; }
}
