package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.model.ModelConfig;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A decoder's hyper-parameters in Hugging Face {@code config.json} terms (Llama, Qwen2, Qwen3), and their mapping
 * to and from GGUF metadata as llama.cpp's converter writes it. The mapping is the converter's own (independent of
 * the loader's) so that round-trip tests catch any disagreement.
 *
 * @param modelType   "llama", "qwen2" or "qwen3"
 * @param ropeScaling Llama 3 rope scaling, or null
 * @param bosTokenId  BOS id, or -1
 * @param eosTokenIds EOS ids (the first is the tokenizer's EOS); may be empty
 * @param torchDtype  "float32", "float16" or "bfloat16": the dtype of the unquantised weights
 * @param hybrid      for the Qwen3.5 hybrids ({@link #HYBRID_ARCHITECTURES}), their own sizes and source JSON; else null
 */
public record ConfigJson(String modelType, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
                         int intermediateSize, int vocabSize, int maxPositionEmbeddings, float rmsNormEps,
                         double ropeTheta, RopeScaling ropeScaling, boolean tieWordEmbeddings, String torchDtype,
                         int bosTokenId, List<Integer> eosTokenIds, HybridConfig hybrid) {

    static final String FILE = "config.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The model types (and GGUF architectures) converted, with their Hugging Face architecture class. */
    static final Map<String, String> ARCHITECTURES = Map.of(
            "llama", "LlamaForCausalLM", "qwen2", "Qwen2ForCausalLM", "qwen3", "Qwen3ForCausalLM");

    /**
     * The Qwen3.5 hybrids (Gated DeltaNet + gated attention) converted from Hugging Face / MLX folders to MLX only,
     * with their Hugging Face architecture class; their config.json is carried over as it is ({@link HybridConfig}).
     */
    static final Map<String, String> HYBRID_ARCHITECTURES = Map.of(
            "qwen3_5", "Qwen3_5ForConditionalGeneration", "qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration");

    public ConfigJson {
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    /** A Llama / Qwen2 / Qwen3 configuration (no hybrid part). */
    public ConfigJson(String modelType, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
                      int intermediateSize, int vocabSize, int maxPositionEmbeddings, float rmsNormEps,
                      double ropeTheta, RopeScaling ropeScaling, boolean tieWordEmbeddings, String torchDtype,
                      int bosTokenId, List<Integer> eosTokenIds) {
        this(modelType, hiddenSize, layers, heads, kvHeads, headDim, intermediateSize, vocabSize, maxPositionEmbeddings,
                rmsNormEps, ropeTheta, ropeScaling, tieWordEmbeddings, torchDtype, bosTokenId, eosTokenIds, null);
    }

    /** "llama, qwen2, qwen3, qwen3_5, qwen3_5_moe": the model types a folder may have. */
    static String folderTypes() {
        var all = new java.util.TreeSet<>(ARCHITECTURES.keySet());
        all.addAll(HYBRID_ARCHITECTURES.keySet());
        return String.join(", ", all);
    }

    /** The name as the shape checks see it (a hybrid's language-model prefix replaced by {@code model.}). */
    String canonicalName(String name) { return hybrid == null ? name : HybridConfig.canonical(name); }

    /** Llama 3's {@code rope_scaling} ({@code rope_type: "llama3"}). */
    public record RopeScaling(double factor, double lowFreqFactor, double highFreqFactor, int originalContext) {
        float[] factors(int dims, double theta) {
            return dev.forkpoint.format.Llama3RopeFactors.of(dims, theta, factor, lowFreqFactor, highFreqFactor, originalContext);
        }
    }

    ConfigJson withDtype(String dtype) {
        return new ConfigJson(modelType, hiddenSize, layers, heads, kvHeads, headDim, intermediateSize, vocabSize,
                maxPositionEmbeddings, rmsNormEps, ropeTheta, ropeScaling, tieWordEmbeddings, dtype, bosTokenId, eosTokenIds, hybrid);
    }

    /** Whether GGUF stores this architecture's q/k rows permuted (llama.cpp does it for Llama only). */
    boolean permutesQk() { return modelType.equals("llama"); }

    // ---------------------------------------------------------------------------------------------------- GGUF -> HF

    /** The configuration a GGUF file's metadata describes. */
    static ConfigJson fromGguf(GgufFile f) {
        String arch = f.getString("general.architecture");
        if (!ARCHITECTURES.containsKey(arch)) {
            throw new ModelFormatException(f.path(), "metadata general.architecture", "architecture '" + arch
                    + "' cannot be converted; supported: " + String.join(", ", new java.util.TreeSet<>(ARCHITECTURES.keySet())));
        }
        ModelConfig c = ModelConfig.fromGguf(f, arch, !arch.equals("llama"));
        if (c.rope().dims() != c.headDim()) {
            throw new ModelFormatException(f.path(), "metadata " + arch + ".rope.dimension_count", "partial rotary embeddings ("
                    + c.rope().dims() + " of " + c.headDim() + " dimensions) have no Hugging Face " + arch + " equivalent");
        }
        RopeScaling scaling = c.rope().freqFactors() == null ? null
                : fitLlama3(f.path(), c.rope().freqFactors(), c.rope().dims(), c.rope().freqBase());
        boolean tied = f.findTensor("output.weight").isEmpty();
        int bos = f.has("tokenizer.ggml.bos_token_id") ? f.getInt("tokenizer.ggml.bos_token_id") : -1;
        List<Integer> eos = new java.util.ArrayList<>();
        if (f.has("tokenizer.ggml.eos_token_id")) eos.add(f.getInt("tokenizer.ggml.eos_token_id"));
        if (f.has("tokenizer.ggml.eot_token_id") && !eos.contains(f.getInt("tokenizer.ggml.eot_token_id"))) {
            eos.add(f.getInt("tokenizer.ggml.eot_token_id"));
        }
        return new ConfigJson(arch, c.dim(), c.layers(), c.heads(), c.kvHeads(), c.headDim(), c.ffnDim(), c.vocabSize(),
                c.contextLength(), c.rmsEps(), c.rope().freqBase(), scaling, tied, "float32", bos, eos);
    }

    /** Candidate Llama 3 parameters: (low, high) frequency factors and original contexts published models use. */
    private static final double[][] LOW_HIGH = {{1, 4}, {1, 2}, {1, 8}, {2, 4}};
    private static final int[] ORIGINAL_CONTEXTS = {8192, 4096, 2048, 16384, 32768, 65536, 131072};

    /**
     * The Llama 3 rope scaling whose factors equal {@code factors} (as llama.cpp computed them from config.json), or
     * a {@link ModelFormatException} when no published parameter set reproduces them.
     */
    static RopeScaling fitLlama3(Path file, float[] factors, int dims, double theta) {
        double factor = 1;
        for (float x : factors) factor = Math.max(factor, x);
        for (double[] lh : LOW_HIGH) {
            for (int ctx : ORIGINAL_CONTEXTS) {
                var s = new RopeScaling(factor, lh[0], lh[1], ctx);
                if (close(s.factors(dims, theta), factors)) return s;
            }
        }
        throw new ModelFormatException(file, "tensor rope_freqs.weight", "the rope frequency factors are not Llama 3 scaling"
                + " with any known parameters (factor " + factor + "); config.json cannot express them");
    }

    private static boolean close(float[] a, float[] b) {
        if (a.length != b.length) return false;
        for (int i = 0; i < a.length; i++) if (Math.abs(a[i] - b[i]) > 1e-5f * Math.max(1, Math.abs(b[i]))) return false;
        return true;
    }

    // ---------------------------------------------------------------------------------------------------- JSON

    /** config.json, with {@code quantization} and {@code quantization_config} when {@code quantization} is non-null. */
    ObjectNode toJson(ObjectNode quantization) {
        if (hybrid != null) return hybrid.toJson(quantization);
        ObjectNode o = JSON.createObjectNode();
        o.putArray("architectures").add(ARCHITECTURES.get(modelType));
        o.put("model_type", modelType);
        o.put("hidden_size", hiddenSize);
        o.put("num_hidden_layers", layers);
        o.put("num_attention_heads", heads);
        o.put("num_key_value_heads", kvHeads);
        o.put("head_dim", headDim);
        o.put("intermediate_size", intermediateSize);
        o.put("vocab_size", vocabSize);
        o.put("max_position_embeddings", maxPositionEmbeddings);
        o.put("rms_norm_eps", Double.parseDouble(Float.toString(rmsNormEps)));
        o.put("rope_theta", ropeTheta);
        if (ropeScaling == null) {
            o.putNull("rope_scaling");
        } else {
            ObjectNode r = o.putObject("rope_scaling");
            r.put("rope_type", "llama3");
            r.put("factor", ropeScaling.factor());
            r.put("low_freq_factor", ropeScaling.lowFreqFactor());
            r.put("high_freq_factor", ropeScaling.highFreqFactor());
            r.put("original_max_position_embeddings", ropeScaling.originalContext());
        }
        o.put("tie_word_embeddings", tieWordEmbeddings);
        o.put("hidden_act", "silu");
        if (modelType.equals("qwen2")) o.put("attention_bias", true);
        else o.put("attention_bias", false);
        o.put("torch_dtype", torchDtype);
        if (bosTokenId >= 0) o.put("bos_token_id", bosTokenId);
        if (eosTokenIds.size() == 1) o.put("eos_token_id", eosTokenIds.getFirst());
        else if (!eosTokenIds.isEmpty()) eosTokenIds.forEach(o.withArray("eos_token_id")::add);
        if (quantization != null) {
            o.set("quantization", quantization);
            o.set("quantization_config", quantization.deepCopy());
        }
        return o;
    }

    /** Reads {@code folder/config.json}; every problem names the file and the field. */
    static ConfigJson read(Path folder) throws IOException {
        Path file = folder.resolve(FILE);
        if (!Files.isRegularFile(file)) {
            throw new ModelFormatException(file, "config.json", "missing: a Hugging Face / MLX model folder needs its config.json");
        }
        JsonNode o = dev.forkpoint.format.JsonFile.read(file, "config.json");
        if (o == null || !o.isObject()) throw new ModelFormatException(file, "config.json", "must be a JSON object");
        String type = text(file, o, "model_type");
        if (HYBRID_ARCHITECTURES.containsKey(type)) return hybrid(file, (ObjectNode) o, type);
        if (!ARCHITECTURES.containsKey(type)) {
            throw new ModelFormatException(file, "model_type", "model type '" + type + "' cannot be converted; supported: "
                    + folderTypes());
        }
        int hidden = positive(file, o, "hidden_size", null);
        int heads = positive(file, o, "num_attention_heads", null);
        int kvHeads = positive(file, o, "num_key_value_heads", heads);
        if (heads % kvHeads != 0) {
            throw new ModelFormatException(file, "num_key_value_heads", "num_attention_heads " + heads + " is not a multiple of " + kvHeads);
        }
        int headDim = o.hasNonNull("head_dim") ? positive(file, o, "head_dim", null) : hidden / heads;
        RopeScaling scaling = null;
        JsonNode rs = o.get("rope_scaling");
        if (rs != null && !rs.isNull()) {
            String rt = rs.hasNonNull("rope_type") ? rs.get("rope_type").asText() : rs.path("type").asText("");
            if (!rt.equals("llama3")) {
                throw new ModelFormatException(file, "rope_scaling.rope_type", "rope scaling '" + rt + "' is not supported (only llama3)");
            }
            scaling = new RopeScaling(number(file, rs, "factor", "rope_scaling."), number(file, rs, "low_freq_factor", "rope_scaling."),
                    number(file, rs, "high_freq_factor", "rope_scaling."),
                    (int) number(file, rs, "original_max_position_embeddings", "rope_scaling."));
        }
        int bos = o.path("bos_token_id").isIntegralNumber() ? o.get("bos_token_id").asInt() : -1;
        List<Integer> eos = new java.util.ArrayList<>();
        JsonNode e = o.get("eos_token_id");
        if (e != null && e.isIntegralNumber()) eos.add(e.asInt());
        else if (e != null && e.isArray()) e.forEach(x -> eos.add(x.asInt()));
        return new ConfigJson(type, hidden, positive(file, o, "num_hidden_layers", null), heads, kvHeads, headDim,
                positive(file, o, "intermediate_size", null), positive(file, o, "vocab_size", null),
                positive(file, o, "max_position_embeddings", 2048),
                (float) (o.hasNonNull("rms_norm_eps") ? number(file, o, "rms_norm_eps", "") : 1e-6),
                o.hasNonNull("rope_theta") ? number(file, o, "rope_theta", "") : 10000.0, scaling,
                o.path("tie_word_embeddings").asBoolean(false), o.path("torch_dtype").asText("float16"), bos, eos);
    }

    /** A Qwen3.5 hybrid's configuration: the sizes from {@code text_config}, the rest kept in {@link HybridConfig#source}. */
    private static ConfigJson hybrid(Path file, ObjectNode root, String type) {
        HybridConfig h = HybridConfig.read(file, root, type);
        JsonNode o = root.hasNonNull("text_config") ? root.get("text_config") : root;
        String p = root.hasNonNull("text_config") ? "text_config." : "";
        double theta = o.path("rope_parameters").hasNonNull("rope_theta") ? number(file, o.get("rope_parameters"), "rope_theta", p + "rope_parameters.")
                : o.hasNonNull("rope_theta") ? number(file, o, "rope_theta", p) : 100000.0;
        int bos = o.path("bos_token_id").isIntegralNumber() ? o.get("bos_token_id").asInt() : -1;
        List<Integer> eos = new java.util.ArrayList<>();
        JsonNode e = o.get("eos_token_id");
        if (e != null && e.isIntegralNumber()) eos.add(e.asInt());
        else if (e != null && e.isArray()) e.forEach(x -> eos.add(x.asInt()));
        return new ConfigJson(type, h.hidden(), h.layers(), h.heads(), h.kvHeads(), h.headDim(),
                h.moe() ? h.expertIntermediate() : h.intermediate(), h.vocab(), positive(file, o, "max_position_embeddings", 2048),
                (float) (o.hasNonNull("rms_norm_eps") ? number(file, o, "rms_norm_eps", p) : 1e-6), theta, null, h.tied(),
                root.path("torch_dtype").asText(root.path("dtype").asText("float32")), bos, eos, h);
    }

    /** The {@code quantization} block of a config.json (null when the model is not quantised). */
    static JsonNode quantization(Path folder) throws IOException {
        JsonNode o = JSON.readTree(folder.resolve(FILE).toFile());
        JsonNode q = o.get("quantization");
        if (q == null || q.isNull()) q = o.get("quantization_config");
        return q == null || q.isNull() ? null : q;
    }

    private static String text(Path file, JsonNode o, String field) {
        JsonNode v = o.get(field);
        if (v == null || !v.isTextual()) throw new ModelFormatException(file, field, "missing or not a string");
        return v.asText();
    }

    private static int positive(Path file, JsonNode o, String field, Integer fallback) {
        JsonNode v = o.get(field);
        if ((v == null || v.isNull()) && fallback != null) return fallback;
        if (v == null || !v.isIntegralNumber() || v.asLong() <= 0 || v.asLong() > Integer.MAX_VALUE) {
            throw new ModelFormatException(file, field, "must be a positive integer, found " + v);
        }
        return v.asInt();
    }

    private static double number(Path file, JsonNode o, String field, String prefix) {
        JsonNode v = o.get(field);
        if (v == null || !v.isNumber()) throw new ModelFormatException(file, prefix + field, "missing or not a number, found " + v);
        return v.asDouble();
    }

    // ---------------------------------------------------------------------------------------------------- HF -> GGUF

    /** GGUF metadata for the model (architecture keys, as llama.cpp's convert_hf_to_gguf writes them). */
    Map<String, MetadataValue> ggufMetadata(String name) {
        Map<String, MetadataValue> m = new LinkedHashMap<>();
        String p = modelType + ".";
        m.put("general.architecture", MetadataValue.of(modelType));
        m.put("general.name", MetadataValue.of(name));
        m.put(p + "vocab_size", MetadataValue.ofU32(vocabSize));
        m.put(p + "context_length", MetadataValue.ofU32(maxPositionEmbeddings));
        m.put(p + "embedding_length", MetadataValue.ofU32(hiddenSize));
        m.put(p + "block_count", MetadataValue.ofU32(layers));
        m.put(p + "feed_forward_length", MetadataValue.ofU32(intermediateSize));
        m.put(p + "rope.dimension_count", MetadataValue.ofU32(headDim));
        m.put(p + "attention.head_count", MetadataValue.ofU32(heads));
        m.put(p + "attention.head_count_kv", MetadataValue.ofU32(kvHeads));
        if (headDim != hiddenSize / heads) {
            m.put(p + "attention.key_length", MetadataValue.ofU32(headDim));
            m.put(p + "attention.value_length", MetadataValue.ofU32(headDim));
        }
        m.put(p + "attention.layer_norm_rms_epsilon", MetadataValue.ofF32(rmsNormEps));
        m.put(p + "rope.freq_base", MetadataValue.ofF32(ropeTheta));
        return m;
    }

    /**
     * The row-major shape config.json implies for a Hugging Face weight name, or null for names it says nothing about.
     */
    long[] expectedShape(String name) {
        if (hybrid != null) throw new IllegalStateException("a hybrid's shapes come from allowedShapes");
        String n = name.replaceFirst("^model\\.layers\\.\\d+\\.", "");
        long q = (long) heads * headDim, kv = (long) kvHeads * headDim;
        return switch (n) {
            case "model.embed_tokens.weight", "lm_head.weight" -> new long[]{vocabSize, hiddenSize};
            case "model.norm.weight", "input_layernorm.weight", "post_attention_layernorm.weight" -> new long[]{hiddenSize};
            case "self_attn.q_proj.weight" -> new long[]{q, hiddenSize};
            case "self_attn.k_proj.weight", "self_attn.v_proj.weight" -> new long[]{kv, hiddenSize};
            case "self_attn.o_proj.weight" -> new long[]{hiddenSize, q};
            case "self_attn.q_proj.bias" -> new long[]{q};
            case "self_attn.k_proj.bias", "self_attn.v_proj.bias" -> new long[]{kv};
            case "self_attn.q_norm.weight", "self_attn.k_norm.weight" -> new long[]{headDim};
            case "mlp.gate_proj.weight", "mlp.up_proj.weight" -> new long[]{intermediateSize, hiddenSize};
            case "mlp.down_proj.weight" -> new long[]{hiddenSize, intermediateSize};
            default -> null;
        };
    }

    /** The shapes config.json allows for a weight; empty for names it says nothing about. */
    List<long[]> allowedShapes(String name) {
        if (hybrid != null) return hybrid.allowedShapes(name);
        long[] s = expectedShape(name);
        return s == null ? List.of() : List.<long[]>of(s);
    }

    /** The first weight the model needs that {@code present} lacks (for a message), or null when none is missing. */
    String missingTensor(java.util.Set<String> present) {
        if (hybrid != null) {
            java.util.Set<String> canonical = new java.util.HashSet<>();
            present.forEach(n -> canonical.add(HybridConfig.canonical(n)));
            return hybrid.missing(canonical);
        }
        for (String required : requiredTensors()) if (!present.contains(required)) return required;
        return null;
    }

    /** The Hugging Face weights every layer of this architecture must have. */
    List<String> requiredTensors() {
        List<String> out = new java.util.ArrayList<>(List.of("model.embed_tokens.weight", "model.norm.weight"));
        if (!tieWordEmbeddings) out.add("lm_head.weight");
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            for (String s : new String[]{"input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
                    "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight", "mlp.gate_proj.weight",
                    "mlp.up_proj.weight", "mlp.down_proj.weight"}) out.add(p + s);
            if (modelType.equals("qwen3")) { out.add(p + "self_attn.q_norm.weight"); out.add(p + "self_attn.k_norm.weight"); }
            if (modelType.equals("qwen2")) {
                for (String s : new String[]{"q_proj", "k_proj", "v_proj"}) out.add(p + "self_attn." + s + ".bias");
            }
        }
        return out;
    }
}
