package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.hf.HfConfig;
import dev.forkpoint.format.hf.MlxModuleQuantization;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpCodec;
import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.MlxFormat;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A Hugging Face or mlx-community model folder: {@code config.json}, safetensors weights (one file or shards by
 * {@code model.safetensors.index.json}) and tokenizer files. Plain weights may be F32, F16 or BF16; MLX-quantised
 * modules ({@code X.weight} U32 codes with {@code X.scales}, and {@code X.biases} in the affine mode; mxfp4, nvfp4 and
 * mxfp8 have none) are read with the mode, bits and group size config.json's {@code quantization} gives them
 * ({@link MlxModuleQuantization}), checked against the shapes, and dequantised as MLX does.
 * Every weight's shape is checked against config.json; errors name the tensor and its file.
 */
final class FolderSource implements SourceModel {
    /** Tokenizer and generation files carried over unchanged to an MLX folder. */
    private static final List<String> TOKENIZER_FILES = List.of(TokenizerJson.TOKENIZER, TokenizerJson.TOKENIZER_CONFIG,
            TokenizerJson.GENERATION_CONFIG, "special_tokens_map.json", "tokenizer.model", "chat_template.jinja",
            "chat_template.json", "vocab.json", "merges.txt", "added_tokens.json");

    private final Path folder;
    private final ConfigJson config;
    private final SafetensorsShards shards;
    private final List<SourceTensor> tensors = new ArrayList<>();

    private FolderSource(Path folder, ConfigJson config, SafetensorsShards shards, JsonNode quantization) {
        this.folder = folder;
        this.config = config;
        this.shards = shards;
        Set<String> consumed = new HashSet<>();
        for (SafetensorsTensor t : shards.tensors()) {
            String name = t.name();
            if (consumed.contains(name) || name.endsWith(".rotary_emb.inv_freq")) continue;
            if (config.hybrid() != null && HybridConfig.ignored(name)) continue;   // vision tower, multi-token prediction
            if (name.endsWith(".scales") || name.endsWith(".biases")) {
                String module = name.substring(0, name.lastIndexOf('.'));
                if (shards.find(module + ".weight").isEmpty()) {
                    throw new ModelFormatException(t.file(), "tensor " + name, "has no " + module + ".weight to belong to");
                }
                continue;
            }
            String module = name.substring(0, name.lastIndexOf('.'));
            var scales = shards.find(module + ".scales");
            SourceTensor st;
            if (name.endsWith(".weight") && scales.isPresent()) {
                st = quantised(t, scales.get(), module, quantization, folder.resolve("config.json"));
            } else {
                st = plain(t, config.hybrid() != null ? 3 : 2);
            }
            if (config.canonicalName(name).equals("lm_head.weight") && config.tieWordEmbeddings()) continue;   // tied: the embedding is the output
            List<long[]> allowed = config.allowedShapes(name);
            if (!allowed.isEmpty() && allowed.stream().noneMatch(a -> Arrays.equals(a, st.shape()))) {
                throw new ModelFormatException(t.file(), "tensor " + name, "shape " + Arrays.toString(st.shape())
                        + " does not match config.json, which implies " + String.join(" or ", allowed.stream().map(Arrays::toString).toList()));
            }
            tensors.add(st);
        }
        Set<String> names = new HashSet<>();
        tensors.forEach(x -> names.add(x.name()));
        String missing = config.missingTensor(names);
        if (missing != null) {
            throw new ModelFormatException(folder, "tensor " + missing, "missing from the folder's safetensors files (config.json's "
                    + config.modelType() + " with " + config.layers() + " layers needs it)");
        }
    }

    static FolderSource open(Path folder) throws IOException {
        HfConfig hf = ConfigJson.readHf(folder);
        ConfigJson config = ConfigJson.fromHf(hf);
        JsonNode quantization = hf.quantization();
        if (!SafetensorsShards.present(folder)) {
            throw new ModelFormatException(folder, "weights", "no model.safetensors, model.safetensors.index.json or *.safetensors file in the folder");
        }
        SafetensorsShards shards = SafetensorsShards.open(folder);
        try {
            return new FolderSource(folder, config, shards, quantization);
        } catch (RuntimeException | Error e) {
            shards.close();
            throw e;
        }
    }

    /** A plain float tensor of one to {@code maxDims} dimensions (3 for a hybrid's convolution and stacked experts). */
    private static SourceTensor plain(SafetensorsTensor t, int maxDims) {
        GgmlType type = t.dtype().ggmlType();
        if (type == null) {
            throw new ModelFormatException(t.file(), "tensor " + t.name(), "dtype " + t.dtype() + " cannot be converted (F32, F16, BF16,"
                    + " or U32 codes with scales and biases)");
        }
        if (t.shape().length < 1 || t.shape().length > maxDims) {
            throw new ModelFormatException(t.file(), "tensor " + t.name(), "shape " + t.shapeString() + " must have one "
                    + (maxDims == 2 ? "or two" : "to " + maxDims) + " dimensions");
        }
        long[] shape = t.shape();
        int cols = Math.toIntExact(shape[shape.length - 1]);
        long rowBytes = (long) cols * t.dtype().bytes();
        return new SourceTensor(t.name(), shape, type, t.file() + ": " + t.name(),
                (row, dst) -> Quantization.dequantize(type, t.data(), row * rowBytes, dst, 0, cols));
    }

    /** A quantised module (MLX affine or mxfp4 / nvfp4 / mxfp8), dequantised row by row as MLX does. */
    private SourceTensor quantised(SafetensorsTensor w, SafetensorsTensor s, String module, JsonNode q, Path configFile) {
        MlxFormat format = MlxModuleQuantization.of(q, module, configFile).format(configFile, w.file(), w.name());
        boolean stacked = config.hybrid() != null && w.shape().length == 3;
        if (w.dtype() != SafetensorsDtype.U32 || (w.shape().length != 2 && !stacked)) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), "a quantised weight must be U32 [rows, cols·bits/32]"
                    + (config.hybrid() != null ? " (or stacked experts [E, rows, cols·bits/32])" : "") + ", found " + w.dtype() + " " + w.shapeString());
        }
        int rows = Math.toIntExact(stacked ? w.shape()[0] * w.shape()[1] : w.shape()[0]);
        long cols = w.shape()[w.shape().length - 1] * 32 / format.bits();
        long[] groups = stacked ? new long[]{w.shape()[0], w.shape()[1], cols / format.groupSize()} : new long[]{rows, cols / format.groupSize()};
        long[] shape = stacked ? new long[]{w.shape()[0], w.shape()[1], cols} : new long[]{rows, cols};
        if (format instanceof FpFormat f) {
            if (!Arrays.equals(s.shape(), groups) || (s.dtype() != SafetensorsDtype.U8 && s.dtype() != SafetensorsDtype.F8_E8M0
                    && s.dtype() != SafetensorsDtype.F8_E4M3) || cols % f.groupSize() != 0) {
                throw new ModelFormatException(s.file(), "tensor " + s.name(), "expected U8 " + Arrays.toString(groups) + " for "
                        + f.typeName() + " codes of shape " + w.shapeString() + ", found " + s.dtype() + " " + s.shapeString());
            }
            var biases = shards.find(module + ".biases");
            if (biases.isPresent()) {
                throw new ModelFormatException(biases.get().file(), "tensor " + module + ".biases", "present, but " + f.typeName() + " has no biases");
            }
            FpTensor t;
            try {
                t = new FpTensor(w.name(), rows, Math.toIntExact(cols), f, w.data(), s.data());
            } catch (InvalidInputException e) {
                throw new ModelFormatException(w.file(), "tensor " + w.name(), e.getMessage());
            }
            return new SourceTensor(w.name(), shape, null, w.file() + ": " + w.name(),
                    (row, dst) -> FpCodec.dequantizeRow(t, row, dst, 0));
        }
        AffineFormat f = (AffineFormat) format;
        SafetensorsTensor b = shards.tensor(module + ".biases");
        for (SafetensorsTensor x : new SafetensorsTensor[]{s, b}) {
            if (!Arrays.equals(x.shape(), groups) || x.dtype().ggmlType() == null || x.dtype() != s.dtype()) {
                throw new ModelFormatException(x.file(), "tensor " + x.name(), "expected " + s.dtype() + " " + Arrays.toString(groups)
                        + " for " + f.typeName() + " codes of shape " + w.shapeString() + ", found " + x.dtype() + " " + x.shapeString());
            }
        }
        AffineTensor t;
        try {
            t = new AffineTensor(w.name(), rows, Math.toIntExact(cols), f, w.data(), s.dtype().ggmlType(), s.data(), b.data());
        } catch (InvalidInputException e) {
            throw new ModelFormatException(w.file(), "tensor " + w.name(), e.getMessage());
        }
        return new SourceTensor(w.name(), shape, null, w.file() + ": " + w.name(),
                (row, dst) -> AffineCodec.dequantizeRow(t, row, dst, 0));
    }

    @Override public Path path() { return folder; }

    @Override public ConfigJson config() { return config; }

    @Override public List<SourceTensor> tensors() { return tensors; }

    @Override
    public void writeTokenizerFiles(Path out) throws IOException {
        requireTokenizer();
        for (String name : TOKENIZER_FILES) {
            Path p = folder.resolve(name);
            if (Files.isRegularFile(p)) Files.copy(p, out.resolve(name), StandardCopyOption.REPLACE_EXISTING);
        }
    }

    @Override
    public Map<String, MetadataValue> tokenizerMetadata() throws IOException {
        requireTokenizer();
        return TokenizerMetadata.fromFolder(folder, config);
    }

    private void requireTokenizer() {
        if (!TokenizerJson.exists(folder)) {
            throw new ModelFormatException(folder.resolve(TokenizerJson.TOKENIZER), TokenizerJson.TOKENIZER,
                    "missing: the folder has no Hugging Face tokenizer");
        }
    }

    @Override
    public void close() {
        shards.close();
    }
}
