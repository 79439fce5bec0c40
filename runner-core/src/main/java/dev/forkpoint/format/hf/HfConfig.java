package dev.forkpoint.format.hf;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.format.JsonFile;
import dev.forkpoint.format.ModelFormatException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A Hugging Face {@code config.json} (as mlx-community folders carry it), read with every field checked: a missing
 * or mistyped field is a {@link ModelFormatException} naming the file and the field. Only what a decoder-only
 * Llama/Qwen transformer needs is read; unknown fields are ignored.
 *
 * @param modelType      {@code model_type} ("llama", "qwen2", "qwen3", …)
 * @param headDim        {@code head_dim}, or hidden_size / num_attention_heads when absent
 * @param ropeScaling    {@code rope_scaling} as given, or null
 * @param quantization   {@code quantization} (or {@code quantization_config}), or null for an unquantised model
 * @param lm             the object the language model's fields are read from: {@code text_config} when the config
 *                       nests them there (Qwen3.5's vision-language checkpoints), else the root
 * @param lmPrefix       how a field of {@code lm} is named in messages ("text_config." or "")
 */
public record HfConfig(Path file, String modelType, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
                       int intermediateSize, int vocabSize, int maxPositions, double rmsEps, double ropeTheta,
                       JsonNode ropeScaling, boolean tieWordEmbeddings, JsonNode quantization, String torchDtype,
                       JsonNode lm, String lmPrefix) {

    public static final String FILE = "config.json";

    /**
     * Just {@code model_type} of a config.json (checked to be there), so that a loader can refuse an architecture it
     * does not run by name before the fields that architecture would need are looked for.
     */
    public static String modelType(Path file) throws IOException {
        JsonNode root = root(file);
        JsonNode type = root.get("model_type");
        if (type == null || type.isNull()) throw new ModelFormatException(file, "model_type", "missing");
        if (!type.isTextual()) throw new ModelFormatException(file, "model_type", "must be a string, found " + type);
        return type.asText();
    }

    /** The file's JSON object; a missing file, malformed JSON or another value is refused naming the file. */
    private static JsonNode root(Path file) throws IOException {
        if (!Files.isRegularFile(file)) throw new ModelFormatException(file, FILE, "missing (a Hugging Face / MLX model folder needs one)");
        JsonNode root = JsonFile.read(file, FILE);
        if (root == null || !root.isObject()) throw new ModelFormatException(file, FILE, "must be a JSON object");
        return root;
    }

    public static HfConfig read(Path file) throws IOException {
        JsonNode root = root(file);
        JsonNode nested = root.get("text_config");
        if (nested != null && !nested.isNull() && !nested.isObject()) throw new ModelFormatException(file, "text_config", "must be an object, found " + nested);
        JsonNode lm = nested != null && nested.isObject() ? nested : root;
        String prefix = lm == root ? "" : "text_config.";
        var r = new Fields(file, lm, prefix);
        String modelType = Optional.ofNullable(root.get("model_type")).filter(n -> !n.isNull()).map(JsonNode::asText).orElse(null);
        if (modelType == null) throw new ModelFormatException(file, "model_type", "missing");
        int hidden = r.positive("hidden_size", null);
        int heads = r.positive("num_attention_heads", null);
        int kvHeads = r.positive("num_key_value_heads", heads);
        if (heads % kvHeads != 0) {
            throw new ModelFormatException(file, prefix + "num_key_value_heads", "num_attention_heads " + heads + " is not a multiple of " + kvHeads);
        }
        int headDim = r.positive("head_dim", hidden % heads == 0 ? hidden / heads : null);
        double eps = r.number("rms_norm_eps", 1e-6);
        // rope_theta: flat, or inside rope_parameters (transformers 5 / Qwen3.5)
        double theta = r.optionalNumber("rope_parameters.rope_theta").orElseGet(() -> r.number("rope_theta", 10000.0));
        if (!(eps > 0 && Float.isFinite((float) eps))) throw new ModelFormatException(file, prefix + "rms_norm_eps", "must be a positive finite float32, found " + eps);
        if (!(theta > 0 && Double.isFinite(theta))) throw new ModelFormatException(file, prefix + "rope_theta", "must be a positive finite number, found " + theta);
        if (headDim % 2 != 0) throw new ModelFormatException(file, prefix + "head_dim", "must be even (rotary embeddings rotate pairs), found " + headDim);
        JsonNode tie = r.node("tie_word_embeddings");
        if (tie == null) tie = new Fields(file, root, "").node("tie_word_embeddings");
        if (tie != null && !tie.isBoolean()) throw new ModelFormatException(file, "tie_word_embeddings", "must be true or false, found " + tie);
        JsonNode scaling = r.node("rope_scaling");
        if (scaling != null && !scaling.isObject()) throw new ModelFormatException(file, prefix + "rope_scaling", "must be an object or null, found " + scaling);
        JsonNode parameters = r.node("rope_parameters");   // transformers 5 folds rope_scaling into rope_parameters
        if (parameters != null && !parameters.isObject()) throw new ModelFormatException(file, prefix + "rope_parameters", "must be an object, found " + parameters);
        if (scaling == null && parameters != null && !parameters.path("rope_type").asText("default").equals("default")) scaling = parameters;
        var top = new Fields(file, root, "");
        JsonNode quant = top.node("quantization") != null ? top.node("quantization") : top.node("quantization_config");
        if (quant != null && !quant.isObject()) throw new ModelFormatException(file, "quantization", "must be an object, found " + quant);
        String dtype = Optional.ofNullable(r.node("torch_dtype")).or(() -> Optional.ofNullable(r.node("dtype")))
                .or(() -> Optional.ofNullable(top.node("torch_dtype"))).map(JsonNode::asText).orElse(null);
        // a mixture-of-experts config may have no dense intermediate_size (Qwen3.5-MoE)
        boolean experts = r.node("num_experts") != null || r.node("num_local_experts") != null;
        int intermediate = experts && r.node("intermediate_size") == null ? 0 : r.positive("intermediate_size", null);
        return new HfConfig(file, modelType, hidden, r.positive("num_hidden_layers", null), heads, kvHeads, headDim,
                intermediate, r.positive("vocab_size", null),
                r.positive("max_position_embeddings", 2048), eps, theta, scaling, tie != null && tie.asBoolean(), quant, dtype,
                lm, prefix);
    }

    /** The language model's fields, read with every value checked; a bad one is refused naming file and field. */
    public Fields fields() { return new Fields(file, lm, lmPrefix); }

    /** Checked reads of one JSON object's fields (dotted paths reach into nested objects). */
    public record Fields(Path file, JsonNode object, String prefix) {
        /** The value at {@code path} ("a.b"), or null when absent or JSON null. */
        public JsonNode node(String path) {
            JsonNode v = object;
            for (String part : path.split("\\.")) {
                v = v == null || !v.isObject() ? null : v.get(part);
            }
            return v == null || v.isNull() ? null : v;
        }

        private ModelFormatException bad(String field, String what) {
            return new ModelFormatException(file, prefix + field, what);
        }

        /** A positive int; {@code fallback} when absent (refused as missing when fallback is null). */
        public int positive(String field, Integer fallback) {
            JsonNode v = node(field);
            if (v == null) {
                if (fallback == null) throw bad(field, "missing");
                return fallback;
            }
            if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() <= 0) throw bad(field, "must be a positive integer, found " + v);
            return v.asInt();
        }

        public double number(String field, double fallback) {
            return optionalNumber(field).orElse(fallback);
        }

        public Optional<Double> optionalNumber(String field) {
            JsonNode v = node(field);
            if (v == null) return Optional.empty();
            if (!v.isNumber()) throw bad(field, "must be a number, found " + v);
            return Optional.of(v.asDouble());
        }

        public boolean bool(String field, boolean fallback) {
            JsonNode v = node(field);
            if (v == null) return fallback;
            if (!v.isBoolean()) throw bad(field, "must be true or false, found " + v);
            return v.asBoolean();
        }

        /** A list of strings, or empty when absent. */
        public Optional<java.util.List<String>> strings(String field) {
            JsonNode v = node(field);
            if (v == null) return Optional.empty();
            if (!v.isArray()) throw bad(field, "must be a list of strings, found " + v);
            java.util.List<String> out = new java.util.ArrayList<>();
            for (JsonNode e : v) {
                if (!e.isTextual()) throw bad(field, "must be a list of strings, found element " + e);
                out.add(e.asText());
            }
            return Optional.of(out);
        }

        /** A list of non-negative ints, or empty when absent. */
        public Optional<int[]> ints(String field) {
            JsonNode v = node(field);
            if (v == null) return Optional.empty();
            if (!v.isArray()) throw bad(field, "must be a list of integers, found " + v);
            int[] out = new int[v.size()];
            for (int i = 0; i < out.length; i++) {
                JsonNode e = v.get(i);
                if (!e.isIntegralNumber() || !e.canConvertToInt() || e.asInt() < 0) throw bad(field, "must be a list of non-negative integers, found element " + e);
                out[i] = e.asInt();
            }
            return Optional.of(out);
        }
    }

    /** The first of {@code architectures}, or null. */
    public static Optional<String> architecture(JsonNode root) {
        JsonNode a = root.get("architectures");
        return a != null && a.isArray() && !a.isEmpty() ? Optional.of(a.get(0).asText()) : Optional.empty();
    }

    /**
     * The per-pair RoPE frequency divisors {@code rope_scaling} asks for, or null when there is none. Llama 3's
     * ("rope_type": "llama3") is supported; "linear" (a uniform factor) too; others are refused naming the type.
     */
    public float[] ropeFactors(int ropeDims) {
        if (ropeScaling == null) return null;
        String type = ropeScaling.has("rope_type") ? ropeScaling.get("rope_type").asText() : ropeScaling.path("type").asText("");
        JsonNode factorNode = ropeScaling.path("factor");
        if (!factorNode.isMissingNode() && !factorNode.isNull() && !factorNode.isNumber()) {
            throw new ModelFormatException(file, "rope_scaling.factor", "must be a number, found " + factorNode);
        }
        double factor = factorNode.asDouble(1.0);
        if (!(factor > 0 && Double.isFinite(factor))) throw new ModelFormatException(file, "rope_scaling.factor", "must be a positive finite number, found " + ropeScaling.get("factor"));
        return switch (type) {
            case "default" -> null;
            case "llama3" -> {
                for (String f : List.of("low_freq_factor", "high_freq_factor", "original_max_position_embeddings")) {
                    if (!ropeScaling.path(f).isNumber()) throw new ModelFormatException(file, "rope_scaling." + f, "missing or not a number");
                }
                double low = ropeScaling.get("low_freq_factor").asDouble(), high = ropeScaling.get("high_freq_factor").asDouble();
                JsonNode original = ropeScaling.get("original_max_position_embeddings");
                if (!(low > 0 && Double.isFinite(low))) throw new ModelFormatException(file, "rope_scaling.low_freq_factor", "must be a positive finite number, found " + low);
                if (!(high > low && Double.isFinite(high))) {
                    throw new ModelFormatException(file, "rope_scaling.high_freq_factor", "must be finite and above low_freq_factor " + low + ", found " + high);
                }
                if (!original.isIntegralNumber() || !original.canConvertToInt() || original.asInt() <= 0) {
                    throw new ModelFormatException(file, "rope_scaling.original_max_position_embeddings", "must be a positive integer, found " + original);
                }
                yield dev.forkpoint.format.Llama3RopeFactors.of(ropeDims, ropeTheta, factor, low, high, original.asInt());
            }
            case "linear" -> {
                float[] f = new float[ropeDims / 2];
                java.util.Arrays.fill(f, (float) factor);
                yield f;
            }
            default -> throw new ModelFormatException(file, "rope_scaling.rope_type", "\"" + type
                    + "\" is not supported (supported: llama3, linear, default)");
        };
    }

    /** Reads a JSON file of the folder when present (tokenizer_config.json, generation_config.json). */
    public static Optional<JsonNode> optionalJson(Path file) throws IOException {
        if (!Files.isRegularFile(file)) return Optional.empty();
        return Optional.ofNullable(JsonFile.read(file, file.getFileName().toString()));
    }

}
