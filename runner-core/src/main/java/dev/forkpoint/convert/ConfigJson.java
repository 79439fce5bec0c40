package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.format.JsonFile;
import dev.forkpoint.format.hf.HfConfig;
import dev.forkpoint.model.Architecture;
import dev.forkpoint.model.Architectures;
import dev.forkpoint.model.Experts;
import dev.forkpoint.model.ExpectedWeight;
import dev.forkpoint.model.HfLayout;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.model.TensorNames;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * A decoder's hyper-parameters in Hugging Face {@code config.json} terms, and their mapping to GGUF metadata as
 * llama.cpp's converter writes it. They are read with the loader's readers ({@link HfConfig} and
 * {@link ModelConfig#fromHf} for a folder, {@link ModelConfig#fromGguf} for a GGUF file); what differs between
 * architectures (tensor names, config.json's architecture class, attention biases, q/k norms, GGUF's q/k row order,
 * hybrid or not, the weights and shapes the loader expects) comes from the architecture's spec
 * ({@link Architecture.Spec#tensorNames()}, {@link Architecture.Spec#hfLayout()}), never from comparing names here.
 *
 * <p>Invariant: {@code modelType} names an architecture the converter handles (its spec has an {@link HfLayout}).
 *
 * @param modelType   Hugging Face's model_type ("llama", "qwen2", "qwen3", "qwen3_5", "qwen3_5_moe")
 * @param ropeScaling Llama 3 rope scaling, or null
 * @param bosTokenId  BOS id, or -1
 * @param eosTokenIds EOS ids (the first is the tokenizer's EOS); may be empty
 * @param torchDtype  "float32", "float16" or "bfloat16": the dtype of the unquantised weights
 * @param hybrid      for a hybrid ({@link HfLayout#hybrid()}: Qwen3.5), its own sizes and source JSON; else null
 */
public record ConfigJson(String modelType, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
                         int intermediateSize, int vocabSize, int maxPositionEmbeddings, float rmsNormEps,
                         double ropeTheta, RopeScaling ropeScaling, boolean tieWordEmbeddings, String torchDtype,
                         int bosTokenId, List<Integer> eosTokenIds, HybridConfig hybrid) {

    static final String FILE = HfConfig.FILE;
    private static final ObjectMapper JSON = new ObjectMapper();

        public ConfigJson {
        eosTokenIds = List.copyOf(eosTokenIds);
        if (converted(modelType).isEmpty()) throw new IllegalArgumentException("model type " + modelType + " is not converted");
    }

    /** A Llama / Qwen2 / Qwen3 configuration (no hybrid part). */
    public ConfigJson(String modelType, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
                      int intermediateSize, int vocabSize, int maxPositionEmbeddings, float rmsNormEps,
                      double ropeTheta, RopeScaling ropeScaling, boolean tieWordEmbeddings, String torchDtype,
                      int bosTokenId, List<Integer> eosTokenIds) {
        this(modelType, hiddenSize, layers, heads, kvHeads, headDim, intermediateSize, vocabSize, maxPositionEmbeddings,
                rmsNormEps, ropeTheta, ropeScaling, tieWordEmbeddings, torchDtype, bosTokenId, eosTokenIds, null);
    }

    /** The spec of a model type (or GGUF architecture) the converter handles, with its layout. */
    private static Optional<Architecture.Spec> converted(String type) {
        return Architectures.find(type).filter(s -> s.hfLayout().isPresent());
    }

    /** "llama, qwen2, qwen3, qwen3_5, qwen3_5_moe": the model types a folder may have. */
    static String folderTypes() {
        return types(s -> true);
    }

    /** "llama, qwen2, qwen3": the architectures written to (and read from) GGUF. */
    static String ggufTypes() {
        return types(s -> !s.hfLayout().orElseThrow().hybrid());
    }

    private static String types(java.util.function.Predicate<Architecture.Spec> which) {
        return String.join(", ", new TreeSet<>(Architectures.converted().stream().filter(which).map(Architecture.Spec::hfModelType).toList()));
    }

    /** The architecture's spec. */
    Architecture.Spec spec() { return converted(modelType).orElseThrow(); }

    private HfLayout layout() { return spec().hfLayout().orElseThrow(); }

    /**
     * GGUF's row order for a weight or bias of this model ({@link Architecture.Spec#ggufQkRowOrder}: GGUF row i
     * holds Hugging Face row result[i]), or null where GGUF keeps Hugging Face's order.
     */
    int[] ggufRowOrder(String hfName) {
        int n = hfName.contains(".q_proj.") ? heads : hfName.contains(".k_proj.") ? kvHeads : 0;
        return n == 0 ? null : spec().ggufQkRowOrder(n, headDim);
    }

    /** The architecture's tensor names, Hugging Face's and GGUF's. */
    TensorNames names() { return spec().tensorNames(); }

    /** The name as the shape checks see it (a hybrid's language-model prefix replaced by {@code model.}). */
    String canonicalName(String name) { return names().canonical(name); }

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

    // ---------------------------------------------------------------------------------------------------- GGUF -> HF

    /** The configuration a GGUF file's metadata describes. */
    static ConfigJson fromGguf(GgufFile f) {
        String arch = f.getString("general.architecture");
        Architecture.Spec spec = converted(arch).filter(s -> !s.hfLayout().orElseThrow().hybrid()).orElseThrow(() ->
                new ModelFormatException(f.path(), "metadata general.architecture", "architecture '" + arch
                        + "' cannot be converted; supported: " + ggufTypes()));
        ModelConfig c = ModelConfig.fromGguf(f, spec);
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
        o.putArray("architectures").add(layout().architectureClass());
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
        o.put("attention_bias", layout().qkvBias());
        o.put("torch_dtype", torchDtype);
        if (bosTokenId >= 0) o.put("bos_token_id", bosTokenId);
        if (eosTokenIds.size() == 1) o.put("eos_token_id", eosTokenIds.getFirst());
        else if (!eosTokenIds.isEmpty()) eosTokenIds.forEach(o.withArray("eos_token_id")::add);
        return withQuantization(o, quantization);
    }

    /** {@code o} with {@code quantization} and mlx-lm's copy {@code quantization_config}, when non-null. */
    static ObjectNode withQuantization(ObjectNode o, ObjectNode quantization) {
        if (quantization != null) {
            o.set("quantization", quantization);
            o.set("quantization_config", quantization.deepCopy());
        }
        return o;
    }

    /**
     * Reads {@code folder/config.json} with the loader's reader, after checking that its model_type is one the
     * converter handles; every problem names the file and the field.
     */
    static HfConfig readHf(Path folder) throws IOException {
        Path file = folder.resolve(HfConfig.FILE);
        String type = HfConfig.modelType(file);
        if (converted(type).isEmpty()) {
            throw new ModelFormatException(file, "model_type", "model type '" + type + "' cannot be converted; supported: " + folderTypes());
        }
        return HfConfig.read(file);
    }

    /** The configuration of a config.json read by {@link #readHf}: the loader's {@link ModelConfig} in config.json's terms. */
    static ConfigJson fromHf(HfConfig hf) throws IOException {
        Architecture.Spec spec = converted(hf.modelType()).orElseThrow();
        ModelConfig c = ModelConfig.fromHf(hf, spec);
        var fields = hf.fields();
        JsonNode bosNode = fields.node("bos_token_id");
        int bos = bosNode != null && bosNode.isIntegralNumber() ? bosNode.asInt() : -1;
        List<Integer> eos = new ArrayList<>();
        JsonNode e = fields.node("eos_token_id");
        if (e != null && e.isIntegralNumber()) eos.add(e.asInt());
        else if (e != null && e.isArray()) e.forEach(x -> eos.add(x.asInt()));
        if (spec.hfLayout().orElseThrow().hybrid()) {
            JsonNode root = JsonFile.read(hf.file(), HfConfig.FILE);
            HybridConfig h = HybridConfig.of((ObjectNode) root, c);
            String dtype = hf.torchDtype() == null ? "float32" : hf.torchDtype();
            Experts experts = c.experts();
            return new ConfigJson(hf.modelType(), c.dim(), c.layers(), c.heads(), c.kvHeads(), c.headDim(),
                    experts != null ? experts.ffnDim() : c.ffnDim(), c.vocabSize(), c.contextLength(), c.rmsEps(),
                    hf.ropeTheta(), null, hf.tieWordEmbeddings(), dtype, bos, eos, h);
        }
        return new ConfigJson(hf.modelType(), c.dim(), c.layers(), c.heads(), c.kvHeads(), c.headDim(), c.ffnDim(),
                c.vocabSize(), c.contextLength(), c.rmsEps(), hf.ropeTheta(), ropeScaling(hf), hf.tieWordEmbeddings(),
                hf.torchDtype() == null ? "float16" : hf.torchDtype(), bos, eos);
    }

    /**
     * config.json's rope scaling as GGUF can carry it: Llama 3's (whose factors become {@code rope_freqs.weight}),
     * or none. The loader has checked its fields ({@link HfConfig#ropeFactors}); another type is refused naming it.
     */
    private static RopeScaling ropeScaling(HfConfig hf) {
        JsonNode rs = hf.ropeScaling();
        if (rs == null) return null;
        String type = rs.hasNonNull("rope_type") ? rs.get("rope_type").asText() : rs.path("type").asText("");
        if (type.equals("default")) return null;
        if (!type.equals("llama3")) {
            throw new ModelFormatException(hf.file(), hf.lmPrefix() + "rope_scaling.rope_type", "rope scaling '" + type + "' is not supported (only llama3)");
        }
        return new RopeScaling(rs.path("factor").asDouble(1.0), rs.get("low_freq_factor").asDouble(), rs.get("high_freq_factor").asDouble(),
                rs.get("original_max_position_embeddings").asInt());
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
     * Every weight this model may have, by GGUF name, with its shapes: the loader's list ({@link HfLayout#weights}),
     * in its order. Sized by the layer count: built once per model, after the layers are known to be there.
     */
    Map<String, ExpectedWeight> expectedWeights() {
        ModelConfig config = hybrid != null ? hybrid.model() : new ModelConfig(spec().name(), hiddenSize, layers, heads, kvHeads,
                headDim, intermediateSize, vocabSize, maxPositionEmbeddings, rmsNormEps, new Rope(headDim, ropeTheta, spec().ggufNeoxRope(), null));
        Map<String, ExpectedWeight> out = new LinkedHashMap<>();
        for (ExpectedWeight w : layout().weights(config)) out.put(w.name(), w);
        return out;
    }

    /** A GGML shape (elements per row first) in row-major order, or the other way. */
    static long[] reversed(long[] shape) {
        long[] out = new long[shape.length];
        for (int i = 0; i < out.length; i++) out[i] = shape[out.length - 1 - i];
        return out;
    }

    /**
     * The row-major shapes the loader allows a Hugging Face weight ({@code expected}: {@link #expectedWeights()});
     * empty for names it says nothing about.
     */
    List<long[]> allowedShapes(String name, Map<String, ExpectedWeight> expected) {
        return names().toGguf(name).map(expected::get).map(w -> w.shapes().stream().map(ConfigJson::reversed).toList()).orElse(List.of());
    }

    /**
     * The first weight the model needs that {@code present} (Hugging Face names) lacks, by its Hugging Face name for a
     * message, or null when none is missing: the loader's required weights ({@code expected}), where no other layout
     * of the same part stands in ({@link ExpectedWeight#instead}), and the output unless tied.
     */
    String missingTensor(java.util.Set<String> present, Map<String, ExpectedWeight> expected) {
        java.util.Set<String> gguf = new java.util.HashSet<>();
        for (String n : present) names().toGguf(n).ifPresent(gguf::add);
        for (ExpectedWeight w : expected.values()) {
            boolean needed = w.required() || (w.name().equals("output.weight") && !tieWordEmbeddings);
            if (needed && !gguf.contains(w.name()) && w.instead().stream().noneMatch(gguf::contains)) {
                return names().toHf(w.name()).orElse(w.name());
            }
        }
        return null;
    }
}
