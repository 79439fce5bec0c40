package dev.forkpoint.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.hf.MlxModuleQuantization;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsFile;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpCodec;
import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.MlxFormat;
import dev.forkpoint.tensor.MlxQuantMode;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The tensors of a Hugging Face / MLX folder under their GGUF names. A module {@code P} is quantised when its
 * {@code P.weight} is U32 and has scales beside it, in one of two layouts:
 * <ul>
 *   <li>MLX (mlx-community, mlx-lm): {@code P.scales}, and {@code P.biases} in the affine mode; mode, bits and group
 *       size from config.json's {@code quantization} ({@code mode} affine, mxfp4, nvfp4 or mxfp8, default affine),
 *       per module as mlx-lm applies it ({@link MlxModuleQuantization});</li>
 *   <li>Ollama's tensor blobs ({@code -mlx} models): {@code P.weight.scale}, and {@code P.weight.bias} in the affine
 *       types; the type from the blob's {@code __metadata__}: {@code P.weight.quant_type} where a blob mixes types,
 *       else {@code quant_type}, read as Ollama's runner reads it (upper-cased): {@code int4} (alias {@code q4},
 *       {@code fp4}) and {@code int8} ({@code q8}, {@code fp8}) are affine, group size 64 by default; {@code mxfp4},
 *       {@code mxfp8} (group size 32) and {@code nvfp4} (16) are MLX's fp modes, laid out as MLX quantises them;
 *       the group size from {@code P.weight.group_size}, else {@code group_size}, else the shapes.</li>
 * </ul>
 * The shapes must fit the format exactly: codes U32 [out, in·bits/32], scales [out, in/group] (F32, F16 or BF16
 * for affine, with biases of the same type and shape; U8 bytes, or safetensors' own F8_E8M0 / F8_E4M3 for the
 * fp modes, which have no biases and, here, no global scale: MLX's {@code P.global_scale}, Ollama's
 * {@code P.weight.global_scale}). Every refusal names the file and the tensor (or the config or metadata key).
 * Plain tensors must be F32, F16 or BF16.
 */
public final class SafetensorsTensors implements ModelTensors {
    /** Ollama's quant_type values read here, for messages. */
    static final String BLOB_TYPES = "int4 (also q4, fp4) and int8 (also q8, fp8): affine, scales and biases; "
            + "mxfp4 (group size 32), nvfp4 (group size 16), mxfp8 (group size 32): no biases";

    private final Path path;
    private final SafetensorsShards shards;
    private final JsonNode quantization;   // config.json "quantization", or null
    private final Path configFile;
    private final TensorNames names;
    private final Map<String, SafetensorsFile> fileOf = new HashMap<>();
    private final Map<String, SafetensorsTensor> byGguf = new HashMap<>();

    /**
     * The tensors of {@code shards}, quantised modules read by config.json's {@code quantization} block (null when
     * the model is not quantised) at {@code configFile}, named as the architecture names them ({@code names}, its
     * spec's {@link Architecture.Spec#tensorNames()}); {@code path} is what the user named, for messages.
     */
    public SafetensorsTensors(Path path, SafetensorsShards shards, JsonNode quantization, Path configFile, TensorNames names) {
        this.path = path;
        this.names = names;
        this.shards = shards;
        this.quantization = quantization;
        this.configFile = configFile;
        for (SafetensorsFile f : shards.files()) for (SafetensorsTensor t : f.tensors()) fileOf.put(t.name(), f);
        for (SafetensorsTensor t : shards.tensors()) {
            if (!isAuxiliary(t.name())) names.toGguf(t.name()).ifPresent(g -> byGguf.putIfAbsent(g, t));
        }
    }

    /** A module's quantised parts (biases null for the fp modes). */
    private record Quantized(SafetensorsTensor packed, SafetensorsTensor scales, SafetensorsTensor biases, MlxFormat format,
                             int rows, int cols) {}

    public Path path() { return path; }

    public int count() {
        int n = 0;
        for (SafetensorsTensor t : shards.tensors()) if (names.toGguf(t.name()).isPresent() && !isAuxiliary(t.name())) n++;
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
                + names.toHf(name).map(h -> " (" + h + ")").orElse(""), "missing"));
        Quantized q = quantized(t);
        if (q != null) {
            return switch (q.format) {
                case AffineFormat a -> backend.weight(new AffineTensor(name, q.rows, q.cols, a, q.packed.data(),
                        q.scales.dtype().ggmlType(), q.scales.data(), q.biases.data()));
                case FpFormat f -> backend.weight(new FpTensor(name, q.rows, q.cols, f, q.packed.data(), q.scales.data()));
            };
        }
        long[] ggml = shape(name).orElseThrow();
        return backend.weight(new GgmlTensor(name, plainType(t), ggml, t.data()));
    }

    /** A plain tensor's element type: F32, F16 or BF16; another dtype is refused naming the tensor. */
    private static GgmlType plainType(SafetensorsTensor t) {
        SafetensorsFile.requireReadable(t);
        GgmlType type = t.dtype().ggmlType();
        if (type == null) {
            throw new ModelFormatException(t.file(), "tensor " + t.name(), "dtype " + t.dtype()
                    + " without scales: a plain weight must be F32, F16 or BF16");
        }
        return type;
    }

    /**
     * The rows of {@code t} (a tensor of these shards, by its name in the file) as floats: a plain tensor's as
     * stored, a quantised module's weight dequantised as MLX does, after the same checks as {@link #weight}.
     * Its shape is row-major, the columns of a quantised weight unpacked.
     */
    public TensorRows rows(SafetensorsTensor t) {
        String origin = t.file() + ": " + t.name();
        Quantized q = quantized(t);
        if (q == null) {
            GgmlType type = plainType(t);
            long[] shape = t.shape();
            if (shape.length == 0) throw new ModelFormatException(t.file(), "tensor " + t.name(), "is a scalar; a weight has one or more dimensions");
            int cols = Math.toIntExact(last(shape));
            long rowBytes = type.bytesFor(cols);
            return new TensorRows(t.name(), shape, type, origin,
                    (row, dst) -> dev.forkpoint.tensor.Quantization.dequantize(type, t.data(), row * rowBytes, dst, 0, cols));
        }
        long[] shape = q.packed.shape().clone();
        shape[shape.length - 1] = q.cols;
        try {
            return switch (q.format) {
                case AffineFormat a -> {
                    var codes = new AffineTensor(t.name(), q.rows, q.cols, a, q.packed.data(), q.scales.dtype().ggmlType(), q.scales.data(), q.biases.data());
                    yield new TensorRows(t.name(), shape, null, origin, (row, dst) -> AffineCodec.dequantizeRow(codes, row, dst, 0));
                }
                case FpFormat f -> {
                    var codes = new FpTensor(t.name(), q.rows, q.cols, f, q.packed.data(), q.scales.data());
                    yield new TensorRows(t.name(), shape, null, origin, (row, dst) -> FpCodec.dequantizeRow(codes, row, dst, 0));
                }
            };
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new ModelFormatException(t.file(), "tensor " + t.name(), e.getMessage());
        }
    }

    public float[] floats(String name) {
        SafetensorsTensor t = find(name).orElseThrow(() -> new ModelFormatException(path, "tensor " + name
                + names.toHf(name).map(h -> " (" + h + ")").orElse(""), "missing"));
        if (quantized(t) != null) throw new ModelFormatException(t.file(), "tensor " + t.name(), "is quantised; a plain F32, F16 or BF16 tensor was expected");
        SafetensorsFile.requireReadable(t);
        GgmlType type = t.dtype().ggmlType();
        if (type == null) throw new ModelFormatException(t.file(), "tensor " + t.name(), "dtype " + t.dtype() + ": F32, F16 or BF16 was expected");
        if (t.elementCount() > Integer.MAX_VALUE) throw new ModelFormatException(t.file(), "tensor " + t.name(), "too large to read as floats");
        float[] out = new float[(int) t.elementCount()];
        dev.forkpoint.tensor.Quantization.dequantize(type, t.data(), 0, out, 0, out.length);
        return out;
    }

    private Optional<SafetensorsTensor> find(String ggufName) {
        return Optional.ofNullable(byGguf.get(ggufName));
    }

    /** Rows of a (possibly stacked, [E, out, in]) tensor: every dimension but the last. */
    private static long rows(long[] shape) {
        long r = 1;
        for (int i = 0; i < shape.length - 1; i++) r *= shape[i];
        return r;
    }

    private static long last(long[] shape) { return shape[shape.length - 1]; }

    /** The quantised parts of a weight, or null when it is a plain tensor. */
    private Quantized quantized(SafetensorsTensor w) {
        if (!w.name().endsWith(".weight")) return null;
        String module = w.name().substring(0, w.name().length() - ".weight".length());
        Optional<SafetensorsTensor> mlxScales = shards.find(module + ".scales");
        Optional<SafetensorsTensor> blobScales = shards.find(w.name() + ".scale");
        if (mlxScales.isEmpty() && blobScales.isEmpty()) return null;
        if (mlxScales.isEmpty()) return blob(w, blobScales.get());
        SafetensorsTensor scales = mlxScales.get();
        MlxModuleQuantization mq = MlxModuleQuantization.of(quantization, module, configFile);   // refuses unknown modes first
        MlxFormat format = mq.format(configFile, w.file(), w.name());
        if (format instanceof AffineFormat a) {
            String biasName = module + ".biases";
            SafetensorsTensor biases = shards.find(biasName).orElseThrow(() -> new ModelFormatException(w.file(), "tensor " + biasName,
                    "missing: " + scales.name() + " is present, and the affine mode (" + mq.key() + ") needs scales and biases"));
            return affine(w, scales, biases, a.bits(), a.groupSize(), "config.json's " + mq.key());
        }
        return fp(w, scales, (FpFormat) format, "module " + module, "config.json's " + mq.key(),
                List.of(module + ".biases", module + ".global_scale"));
    }

    /**
     * An fp module's parts checked against each other: none of {@code absent} (its biases, its global scale) may
     * exist; {@code subject} ("module P", "tensor P.weight") and {@code source} (where the mode was read) for messages.
     */
    private Quantized fp(SafetensorsTensor w, SafetensorsTensor scales, FpFormat f, String subject, String source, List<String> absent) {
        requirePacked(w);
        for (String extra : absent) {
            Optional<SafetensorsTensor> t = shards.find(extra);
            if (t.isPresent()) {
                throw new ModelFormatException(t.get().file(), "tensor " + extra, "present, but " + subject + " is " + f.typeName()
                        + " (" + source + "), which has " + (extra.endsWith("global_scale") ? "no global scale supported here" : "no biases"));
            }
        }
        SafetensorsDtype own = f.scale() == dev.forkpoint.tensor.MiniFloat.E8M0 ? SafetensorsDtype.F8_E8M0 : SafetensorsDtype.F8_E4M3;
        if ((scales.dtype() != SafetensorsDtype.U8 && scales.dtype() != own) || scales.shape().length != w.shape().length
                || rows(scales.shape()) != rows(w.shape())) {
            throw new ModelFormatException(scales.file(), "tensor " + scales.name(), "expected " + f.typeName() + " scales U8 (or " + own
                    + ") [" + rows(w.shape()) + ", groups], found " + scales.dtype() + " " + scales.shapeString());
        }
        long cols = last(w.shape()) * 32 / f.bits();
        if (last(scales.shape()) * f.groupSize() != cols) {
            throw new ModelFormatException(scales.file(), "tensor " + scales.name(), scales.shapeString() + " does not fit "
                    + w.name() + " " + w.shapeString() + ": " + cols + " columns at " + f.bits() + " bits need " + cols / f.groupSize()
                    + (cols % f.groupSize() == 0 ? "" : "+") + " scales per row of " + f.typeName() + " groups of " + f.groupSize()
                    + " (the mode " + source + " gives)");
        }
        return new Quantized(w, scales, null, f, Math.toIntExact(rows(w.shape())), Math.toIntExact(cols));
    }

    private static void requirePacked(SafetensorsTensor w) {
        if (w.dtype() != SafetensorsDtype.U32 || w.shape().length < 2 || w.shape().length > 3) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), "a quantised weight must be U32 [out, in·bits/32] (or stacked experts [E, out, in·bits/32]), found "
                    + w.dtype() + " " + w.shapeString());
        }
    }

    /**
     * An Ollama tensor blob's parts ({@code P.weight.scale}, {@code P.weight.bias} when affine), the type and group
     * size from its metadata, per tensor ({@code P.weight.quant_type}) before the blob's own ({@code quant_type}).
     */
    private Quantized blob(SafetensorsTensor w, SafetensorsTensor scales) {
        Map<String, String> metadata = metadataOf(w);
        String typeKey = "__metadata__." + blobKey(w, "quant_type");
        String raw = metadata.get(blobKey(w, "quant_type"));
        MlxQuantMode mode;
        int bits;
        switch (raw == null ? "" : raw.trim().toUpperCase(java.util.Locale.ROOT)) {   // as Ollama's runner reads it
            case "INT4", "Q4", "FP4" -> { mode = MlxQuantMode.AFFINE; bits = 4; }
            case "INT8", "Q8", "FP8" -> { mode = MlxQuantMode.AFFINE; bits = 8; }
            case "MXFP4" -> { mode = MlxQuantMode.MXFP4; bits = 4; }
            case "NVFP4" -> { mode = MlxQuantMode.NVFP4; bits = 4; }
            case "MXFP8" -> { mode = MlxQuantMode.MXFP8; bits = 8; }
            default -> throw new ModelFormatException(w.file(), "tensor " + w.name() + " " + typeKey,
                    (raw == null ? "missing" : "\"" + raw + "\" is not supported") + " (" + scales.name() + " is present); supported: " + BLOB_TYPES);
        }
        String source = typeKey + " \"" + raw + "\"";
        String groupKey = "__metadata__." + blobKey(w, "group_size");
        int group = blobGroup(w);
        if (mode == MlxQuantMode.AFFINE) {
            String biasName = w.name() + ".bias";
            SafetensorsTensor biases = shards.find(biasName).orElseThrow(() -> new ModelFormatException(w.file(), "tensor " + biasName,
                    "missing: " + scales.name() + " is present, and " + source + " is affine, which needs scales and biases"));
            return affine(w, scales, biases, bits, group, groupKey);
        }
        FpFormat f = FpFormat.of(mode);
        Quantized q = fp(w, scales, f, "tensor " + w.name(), source, List.of(w.name() + ".bias", w.name() + ".global_scale"));
        if (group > 0 && group != f.groupSize()) {   // after the parts: affine blobs labelled fp are named for their biases
            throw new ModelFormatException(w.file(), "tensor " + w.name() + " " + groupKey, "group size " + group + ", but "
                    + source + " has groups of " + f.groupSize() + " only");
        }
        return q;
    }

    /** Affine parts checked against each other; {@code configured} is the group size {@code key} gives (−1: none, the shapes'). */
    private Quantized affine(SafetensorsTensor w, SafetensorsTensor scales, SafetensorsTensor biases, int bits, int configured, String key) {
        requirePacked(w);
        for (SafetensorsTensor s : List.of(scales, biases)) {
            if (s.dtype().ggmlType() == null || s.shape().length != w.shape().length || rows(s.shape()) != rows(w.shape())) {
                throw new ModelFormatException(s.file(), "tensor " + s.name(), "expected F32/F16/BF16 [" + rows(w.shape())
                        + ", groups], found " + s.dtype() + " " + s.shapeString());
            }
        }
        if (scales.dtype() != biases.dtype() || last(scales.shape()) != last(biases.shape())) {
            throw new ModelFormatException(biases.file(), "tensor " + biases.name(), biases.dtype() + " " + biases.shapeString()
                    + " does not match " + scales.name() + " " + scales.dtype() + " " + scales.shapeString());
        }
        long cols = last(w.shape()) * 32 / bits;
        long groups = last(scales.shape());
        if (last(w.shape()) * 32 % bits != 0 || groups == 0 || cols % groups != 0) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), "packed shape " + w.shapeString() + " at " + bits
                    + " bits does not divide into the " + groups + " groups of " + scales.name());
        }
        int group = Math.toIntExact(cols / groups);
        if (configured > 0 && configured != group) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), "its shapes imply group size " + group + " at " + bits
                    + " bits, but " + key + " says " + configured);
        }
        AffineFormat format;
        try {
            format = new AffineFormat(bits, group);
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), e.getMessage());
        }
        return new Quantized(w, scales, biases, format, Math.toIntExact(rows(w.shape())), Math.toIntExact(cols));
    }

    /** The blob metadata key of {@code field} for {@code w}: {@code w.field} where the blob has it, else {@code field}. */
    private String blobKey(SafetensorsTensor w, String field) {
        String own = w.name() + "." + field;
        return metadataOf(w).containsKey(own) ? own : field;
    }

    /** A blob's group size for {@code w}, or −1 when its metadata gives none. */
    private int blobGroup(SafetensorsTensor w) {
        String key = blobKey(w, "group_size");
        String g = metadataOf(w).get(key);
        if (g == null) return -1;
        try {
            int v = Integer.parseInt(g.trim());
            if (v <= 0) throw new NumberFormatException();
            return v;
        } catch (NumberFormatException e) {
            throw new ModelFormatException(w.file(), "tensor " + w.name() + " __metadata__." + key, "not a positive integer: \"" + g + "\"");
        }
    }

    private Map<String, String> metadataOf(SafetensorsTensor t) {
        SafetensorsFile f = fileOf.get(t.name());
        return f == null ? Map.of() : f.metadata();
    }

    /**
     * The first tensor holding a NaN or infinite value, by its bits: plain floats (F32, F16, BF16, affine scales and
     * biases too), and the E8M0 scale bytes of mxfp4 and mxfp8 modules, where MLX reads 255 as +∞. (E4M3 has no
     * NaN or infinity in MLX.) Modules whose quantisation cannot be read are skipped; loading names them.
     */
    public Optional<String> firstNonFinite() {
        for (SafetensorsTensor t : shards.tensors()) {
            long i = switch (t.dtype()) {
                case F32 -> NonFiniteScan.f32(t.data());
                case F16 -> NonFiniteScan.f16(t.data());
                case BF16 -> NonFiniteScan.bf16(t.data());
                default -> -1;
            };
            String weightName = t.name().endsWith(".scales") ? t.name().substring(0, t.name().length() - ".scales".length()) + ".weight"
                    : t.name().endsWith(".weight.scale") ? t.name().substring(0, t.name().length() - ".scale".length()) : null;
            if (i < 0 && weightName != null && (t.dtype() == SafetensorsDtype.U8 || t.dtype() == SafetensorsDtype.F8_E8M0)) {
                Optional<SafetensorsTensor> w = shards.find(weightName);
                Quantized q = null;
                try {
                    q = w.map(this::quantized).orElse(null);
                } catch (dev.forkpoint.InvalidInputException e) {
                    // not readable: the load reports it
                }
                if (q != null && q.format instanceof FpFormat f && f.scale() == dev.forkpoint.tensor.MiniFloat.E8M0) {
                    i = NonFiniteScan.byteValue(t.data(), (byte) 0xFF);
                }
            }
            if (i >= 0) return Optional.of(t.name() + " (" + t.dtype() + "): element " + i);
        }
        return Optional.empty();
    }

    /** "F32" → 3, "affine 4-bit g64" → 112, "mxfp4" → 35: for show. */
    Map<String, Integer> types() {
        Map<String, Integer> types = new java.util.TreeMap<>();
        for (SafetensorsTensor t : shards.tensors()) {
            if (isAuxiliary(t.name())) continue;
            Quantized q = names.toGguf(t.name()).isPresent() ? quantized(t) : null;
            types.merge(q == null ? t.dtype().name() : q.format.typeName(), 1, Integer::sum);
        }
        return types;
    }

    long parameterCount() {
        long n = 0;
        for (SafetensorsTensor t : shards.tensors()) {
            if (isAuxiliary(t.name())) continue;
            Quantized q = names.toGguf(t.name()).isPresent() ? quantized(t) : null;
            n += q == null ? t.elementCount() : (long) q.rows * q.cols;
        }
        return n;
    }
}
