package dev.forkpoint.format.hf;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.tensor.MlxFormat;
import dev.forkpoint.tensor.MlxQuantMode;

import java.nio.file.Path;

/**
 * How config.json's {@code quantization} quantises one module of an MLX folder, resolved as mlx-lm applies it
 * ({@code nn.quantize} with a class predicate returning the module's entry): a per-module entry
 * {@code "P": {…}} gives its own {@code mode}, else affine ({@code to_quantized}'s default), its own bits and group
 * size, else the default entry's where the module has the default's mode, else MLX's defaults for the mode
 * ({@link MlxQuantMode}); without a per-module entry the default entry's mode (affine when absent), bits and group
 * size, each defaulting the same way. {@code key} is the config key that gave the entry ("quantization" or
 * "quantization.P"), for messages.
 */
public record MlxModuleQuantization(MlxQuantMode mode, int bits, int groupSize, String key) {

    /** The supported modes with their bits and group sizes, for messages. */
    public static final String SUPPORTED = "affine (bits 2, 3, 4, 5, 6, 8; group sizes 32, 64, 128), "
            + "mxfp4 (bits 4, group size 32), nvfp4 (bits 4, group size 16), mxfp8 (bits 8, group size 32)";

    /**
     * The quantisation of {@code module} (which has scales) from {@code quantization} (config.json's block, or null),
     * read from {@code configFile}. Refuses, naming the file, the key and the module's weight: no block, a
     * per-module {@code false}, an unknown mode, a non-integer bits or group size.
     */
    public static MlxModuleQuantization of(JsonNode quantization, String module, Path configFile) {
        String tensor = module + ".weight";
        if (quantization == null) {
            throw new ModelFormatException(configFile, "quantization", "missing, but module " + module + " has scales");
        }
        JsonNode own = quantization.get(module);
        if (own != null && own.isBoolean() && !own.asBoolean()) {
            throw new ModelFormatException(configFile, "quantization." + module, "is false, but the module has scales");
        }
        boolean perModule = own != null && own.isObject();
        JsonNode entry = perModule ? own : quantization;
        String prefix = perModule ? "quantization." + module : "quantization";
        MlxQuantMode global = mode(quantization, "quantization", tensor, configFile);
        MlxQuantMode mode = perModule ? (own.has("mode") ? mode(own, prefix, tensor, configFile) : MlxQuantMode.AFFINE) : global;
        boolean inherit = perModule && mode == global;
        int bits = integer(quantization, entry, prefix, "bits", inherit, mode.defaultBits(), configFile);
        int group = integer(quantization, entry, prefix, "group_size", inherit, mode.defaultGroupSize(), configFile);
        return new MlxModuleQuantization(mode, bits, group, prefix);
    }

    /**
     * The format these values describe; refuses bits or a group size the mode does not allow, naming config.json's
     * key and the tensor {@code tensor} of {@code weightsFile}.
     */
    public MlxFormat format(Path configFile, Path weightsFile, String tensor) {
        try {
            return mode.format(bits, groupSize);
        } catch (InvalidInputException e) {
            throw new ModelFormatException(configFile, key, e.getMessage() + " (tensor " + tensor + " in " + weightsFile
                    + "; supported: " + SUPPORTED + ")");
        }
    }

    private static MlxQuantMode mode(JsonNode entry, String prefix, String tensor, Path configFile) {
        JsonNode m = entry.get("mode");
        if (m == null || m.isNull()) return MlxQuantMode.AFFINE;
        return MlxQuantMode.parse(m.asText()).orElseThrow(() -> new ModelFormatException(configFile, prefix + ".mode",
                "mode " + m + " (for tensor " + tensor + ") is not supported; supported: " + SUPPORTED));
    }

    /** entry's integer {@code field}; else the default entry's (when {@code inherit}); else {@code fallback}. */
    private static int integer(JsonNode quantization, JsonNode entry, String prefix, String field, boolean inherit, int fallback,
                               Path configFile) {
        JsonNode v = entry.get(field);
        String key = prefix + "." + field;
        if (v == null && inherit) {
            v = quantization.get(field);
            key = "quantization." + field;
        }
        if (v == null || v.isNull()) return fallback;
        if (!v.isIntegralNumber()) throw new ModelFormatException(configFile, key, "not an integer: " + v);
        return v.asInt();
    }
}
