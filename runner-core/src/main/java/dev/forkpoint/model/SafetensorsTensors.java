package dev.forkpoint.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.hf.HfTensorNames;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.GgmlType;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The tensors of a Hugging Face / MLX folder under their GGUF names. A module {@code P} is quantised when its
 * {@code P.weight} is U32 and has scales beside it, in one of two layouts:
 * <ul>
 *   <li>mlx-community: {@code P.scales}, {@code P.biases}; bits and group size from config.json's
 *       {@code quantization} (a per-module entry {@code "P": {group_size, bits}} overrides the default);</li>
 *   <li>Ollama's tensor blobs: {@code P.weight.scale}, {@code P.weight.bias}; bits from the blob's
 *       {@code __metadata__.quant_type} (int4, int8) and {@code group_size}.</li>
 * </ul>
 * Only the affine mode is supported; other modes are refused at load naming the tensor. The group size the shapes
 * imply must agree with the configured one. Plain tensors must be F32, F16 or BF16.
 */
final class SafetensorsTensors implements ModelTensors {
    private static final String SUPPORTED_MODES = "affine (bits 2, 3, 4, 5, 6, 8; group sizes 32, 64, 128)";

    private final Path path;
    private final SafetensorsShards shards;
    private final JsonNode quantization;   // config.json "quantization", or null
    private final Path configFile;
    private final Map<String, SafetensorsFile> fileOf = new HashMap<>();

    SafetensorsTensors(Path path, SafetensorsShards shards, JsonNode quantization, Path configFile) {
        this.path = path;
        this.shards = shards;
        this.quantization = quantization;
        this.configFile = configFile;
        for (SafetensorsFile f : shards.files()) for (SafetensorsTensor t : f.tensors()) fileOf.put(t.name(), f);
    }

    /** A module's quantised parts. */
    private record Quantized(SafetensorsTensor packed, SafetensorsTensor scales, SafetensorsTensor biases, AffineFormat format,
                             int rows, int cols) {}

    public Path path() { return path; }

    public int count() {
        int n = 0;
        for (SafetensorsTensor t : shards.tensors()) if (HfTensorNames.toGguf(t.name()).isPresent() && !isAuxiliary(t.name())) n++;
        return n;
    }

    private static boolean isAuxiliary(String name) {
        return name.endsWith(".scales") || name.endsWith(".biases") || name.endsWith(".weight.scale") || name.endsWith(".weight.bias");
    }

    public Optional<long[]> shape(String name) {
        Optional<SafetensorsTensor> t = find(name);
        if (t.isEmpty()) return Optional.empty();
        Quantized q = quantized(t.get());
        if (q != null) return Optional.of(new long[]{q.cols, q.rows});
        long[] s = t.get().shape();
        long[] ggml = new long[s.length];
        for (int i = 0; i < s.length; i++) ggml[i] = s[s.length - 1 - i];
        return Optional.of(ggml);
    }

    public Weight weight(String name, Backend backend) {
        SafetensorsTensor t = find(name).orElseThrow(() -> new ModelFormatException(path, "tensor " + name
                + HfTensorNames.toHf(name).map(h -> " (" + h + ")").orElse(""), "missing"));
        Quantized q = quantized(t);
        if (q != null) {
            return backend.weight(new AffineTensor(name, q.rows, q.cols, q.format, q.packed.data(), q.scales.dtype().ggmlType(),
                    q.scales.data(), q.biases.data()));
        }
        SafetensorsFile.requireReadable(t);
        GgmlType type = t.dtype().ggmlType();
        if (type == null) {
            throw new ModelFormatException(t.file(), "tensor " + t.name(), "dtype " + t.dtype()
                    + " without scales: a plain weight must be F32, F16 or BF16");
        }
        long[] ggml = shape(name).orElseThrow();
        return backend.weight(new GgufTensor(name, type, ggml, 0, t.data()));
    }

    private Optional<SafetensorsTensor> find(String ggufName) {
        return HfTensorNames.toHf(ggufName).flatMap(shards::find);
    }

    /** The quantised parts of a weight, or null when it is a plain tensor. */
    private Quantized quantized(SafetensorsTensor w) {
        if (!w.name().endsWith(".weight")) return null;
        String module = w.name().substring(0, w.name().length() - ".weight".length());
        Optional<SafetensorsTensor> mlxScales = shards.find(module + ".scales");
        Optional<SafetensorsTensor> blobScales = shards.find(w.name() + ".scale");
        if (mlxScales.isEmpty() && blobScales.isEmpty()) return null;
        boolean mlx = mlxScales.isPresent();
        SafetensorsTensor scales = mlx ? mlxScales.get() : blobScales.get();
        int bits = mlx ? configuredBits(module) : blobBits(w);   // refuses other modes first, naming them
        String biasName = mlx ? module + ".biases" : w.name() + ".bias";
        SafetensorsTensor biases = shards.find(biasName).orElseThrow(() -> new ModelFormatException(w.file(), "tensor " + biasName,
                "missing: " + scales.name() + " is present, and only the affine mode (scales and biases) is supported"));
        if (w.dtype() != SafetensorsDtype.U32 || w.shape().length != 2) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), "a quantised weight must be U32 [out, in·bits/32], found "
                    + w.dtype() + " " + w.shapeString());
        }
        for (SafetensorsTensor s : List.of(scales, biases)) {
            if (s.dtype().ggmlType() == null || s.shape().length != 2 || s.shape()[0] != w.shape()[0]) {
                throw new ModelFormatException(s.file(), "tensor " + s.name(), "expected F32/F16/BF16 [" + w.shape()[0]
                        + ", groups], found " + s.dtype() + " " + s.shapeString());
            }
        }
        if (scales.dtype() != biases.dtype() || scales.shape()[1] != biases.shape()[1]) {
            throw new ModelFormatException(biases.file(), "tensor " + biases.name(), biases.dtype() + " " + biases.shapeString()
                    + " does not match " + scales.name() + " " + scales.dtype() + " " + scales.shapeString());
        }
        long cols = w.shape()[1] * 32 / bits;
        long groups = scales.shape()[1];
        if (w.shape()[1] * 32 % bits != 0 || groups == 0 || cols % groups != 0) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), "packed shape " + w.shapeString() + " at " + bits
                    + " bits does not divide into the " + groups + " groups of " + scales.name());
        }
        int group = Math.toIntExact(cols / groups);
        int configured = mlx ? configuredGroup(module) : blobGroup(w, group);
        if (configured != group) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), "its shapes imply group size " + group + " at " + bits
                    + " bits, but the configuration says " + configured);
        }
        AffineFormat format;
        try {
            format = new AffineFormat(bits, group);
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), e.getMessage());
        }
        return new Quantized(w, scales, biases, format, Math.toIntExact(w.shape()[0]), Math.toIntExact(cols));
    }

    /** The module's entry in config.json's quantization: its own object, or the defaults. */
    private JsonNode moduleQuantization(String module) {
        if (quantization == null) {
            throw new ModelFormatException(configFile, "quantization", "missing, but module " + module + " has scales");
        }
        JsonNode own = quantization.get(module);
        if (own != null && own.isBoolean() && !own.asBoolean()) {
            throw new ModelFormatException(configFile, "quantization." + module, "is false, but the module has scales");
        }
        JsonNode entry = own != null && own.isObject() ? own : quantization;
        String mode = entry.path("mode").asText(quantization.path("mode").asText("affine"));
        if (!mode.equals("affine")) {
            throw new ModelFormatException(configFile, "quantization" + (entry == own ? "." + module : "") + ".mode",
                    "mode \"" + mode + "\" is not supported; supported: " + SUPPORTED_MODES);
        }
        return entry;
    }

    private int configuredBits(String module) {
        return configuredInt(module, "bits");
    }

    private int configuredGroup(String module) {
        return configuredInt(module, "group_size");
    }

    private int configuredInt(String module, String field) {
        JsonNode entry = moduleQuantization(module);
        JsonNode v = entry.has(field) ? entry.get(field) : quantization.get(field);
        if (v == null || !v.isIntegralNumber()) {
            throw new ModelFormatException(configFile, "quantization." + field, "missing or not an integer (module " + module + ")");
        }
        return v.asInt();
    }

    private int blobBits(SafetensorsTensor w) {
        String type = metadataOf(w).getOrDefault("quant_type", "");
        return switch (type) {
            case "int4" -> 4;
            case "int8" -> 8;
            default -> throw new ModelFormatException(w.file(), "tensor " + w.name() + " __metadata__.quant_type",
                    "\"" + type + "\" is not supported; supported: int4, int8 (" + SUPPORTED_MODES + ")");
        };
    }

    private int blobGroup(SafetensorsTensor w, int implied) {
        String g = metadataOf(w).get("group_size");
        if (g == null) return implied;
        try {
            return Integer.parseInt(g.trim());
        } catch (NumberFormatException e) {
            throw new ModelFormatException(w.file(), "tensor " + w.name() + " __metadata__.group_size", "not an integer: \"" + g + "\"");
        }
    }

    private Map<String, String> metadataOf(SafetensorsTensor t) {
        SafetensorsFile f = fileOf.get(t.name());
        return f == null ? Map.of() : f.metadata();
    }

    /** "F32" → 3, "affine 4-bit g64" → 112: for show. */
    Map<String, Integer> types() {
        Map<String, Integer> types = new java.util.TreeMap<>();
        for (SafetensorsTensor t : shards.tensors()) {
            if (isAuxiliary(t.name())) continue;
            Quantized q = HfTensorNames.toGguf(t.name()).isPresent() ? quantized(t) : null;
            types.merge(q == null ? t.dtype().name() : "affine " + q.format.bits() + "-bit g" + q.format.groupSize(), 1, Integer::sum);
        }
        return types;
    }

    long parameterCount() {
        long n = 0;
        for (SafetensorsTensor t : shards.tensors()) {
            if (isAuxiliary(t.name())) continue;
            Quantized q = HfTensorNames.toGguf(t.name()).isPresent() ? quantized(t) : null;
            n += q == null ? t.elementCount() : (long) q.rows * q.cols;
        }
        return n;
    }
}
