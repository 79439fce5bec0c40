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
 */
public record HfConfig(Path file, String modelType, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
                       int intermediateSize, int vocabSize, int maxPositions, double rmsEps, double ropeTheta,
                       JsonNode ropeScaling, boolean tieWordEmbeddings, JsonNode quantization, String torchDtype) {

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
        var r = new Object() {
            JsonNode node(String field) {
                JsonNode v = root.get(field);
                return v == null || v.isNull() ? null : v;
            }

            int positive(String field, Integer fallback) {
                JsonNode v = node(field);
                if (v == null) {
                    if (fallback == null) throw new ModelFormatException(file, field, "missing");
                    return fallback;
                }
                if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() <= 0) {
                    throw new ModelFormatException(file, field, "must be a positive integer, found " + v);
                }
                return v.asInt();
            }

            double number(String field, double fallback) {
                JsonNode v = node(field);
                if (v == null) return fallback;
                if (!v.isNumber()) throw new ModelFormatException(file, field, "must be a number, found " + v);
                return v.asDouble();
            }
        };
        String modelType = Optional.ofNullable(r.node("model_type")).map(JsonNode::asText).orElse(null);
        if (modelType == null) throw new ModelFormatException(file, "model_type", "missing");
        int hidden = r.positive("hidden_size", null);
        int heads = r.positive("num_attention_heads", null);
        int kvHeads = r.positive("num_key_value_heads", heads);
        if (heads % kvHeads != 0) {
            throw new ModelFormatException(file, "num_key_value_heads", "num_attention_heads " + heads + " is not a multiple of " + kvHeads);
        }
        int headDim = r.positive("head_dim", hidden % heads == 0 ? hidden / heads : null);
        double eps = r.number("rms_norm_eps", 1e-6);
        double theta = r.number("rope_theta", 10000.0);
        if (!(eps > 0 && Float.isFinite((float) eps))) throw new ModelFormatException(file, "rms_norm_eps", "must be a positive finite float32, found " + eps);
        if (!(theta > 0 && Double.isFinite(theta))) throw new ModelFormatException(file, "rope_theta", "must be a positive finite number, found " + theta);
        if (headDim % 2 != 0) throw new ModelFormatException(file, "head_dim", "must be even (rotary embeddings rotate pairs), found " + headDim);
        JsonNode tie = r.node("tie_word_embeddings");
        if (tie != null && !tie.isBoolean()) throw new ModelFormatException(file, "tie_word_embeddings", "must be true or false, found " + tie);
        JsonNode scaling = r.node("rope_scaling");
        if (scaling != null && !scaling.isObject()) throw new ModelFormatException(file, "rope_scaling", "must be an object or null, found " + scaling);
        JsonNode quant = r.node("quantization") != null ? r.node("quantization") : r.node("quantization_config");
        if (quant != null && !quant.isObject()) throw new ModelFormatException(file, "quantization", "must be an object, found " + quant);
        String dtype = Optional.ofNullable(r.node("torch_dtype")).map(JsonNode::asText).orElse(null);
        return new HfConfig(file, modelType, hidden, r.positive("num_hidden_layers", null), heads, kvHeads, headDim,
                r.positive("intermediate_size", null), r.positive("vocab_size", null),
                r.positive("max_position_embeddings", 2048), eps, theta, scaling, tie != null && tie.asBoolean(), quant, dtype);
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
                yield dev.forkpoint.backend.Rope.llama3Factors(ropeDims, ropeTheta, factor, low, high, original.asInt());
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
