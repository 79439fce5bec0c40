package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.hf.HfConfig;
import dev.forkpoint.format.hf.MlxModuleQuantization;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.model.ExpectedWeight;
import dev.forkpoint.model.SafetensorsTensors;
import dev.forkpoint.model.TensorRows;
import dev.forkpoint.tokenizer.GgufTokenizerMetadata;

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
 * ({@link MlxModuleQuantization}), checked against the shapes, and dequantised as MLX does: all by the loader's
 * reader ({@link SafetensorsTensors#rows}).
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
    private final List<TensorRows> tensors = new ArrayList<>();

    private FolderSource(Path folder, ConfigJson config, SafetensorsShards shards, JsonNode quantization) {
        this.folder = folder;
        this.config = config;
        this.shards = shards;
        var reader = new SafetensorsTensors(folder, shards, quantization, folder.resolve(HfConfig.FILE), config.names());
        Map<String, ExpectedWeight> expected = config.expectedWeights();
        for (SafetensorsTensor t : shards.tensors()) {
            String name = t.name();
            if (name.endsWith(".rotary_emb.inv_freq")) continue;
            if (config.hybrid() != null && HybridConfig.ignored(name)) continue;   // vision tower, multi-token prediction
            if (name.endsWith(".scales") || name.endsWith(".biases")) {
                String module = name.substring(0, name.lastIndexOf('.'));
                if (shards.find(module + ".weight").isEmpty()) {
                    throw new ModelFormatException(t.file(), "tensor " + name, "has no " + module + ".weight to belong to");
                }
                continue;
            }
            TensorRows rows = reader.rows(t);
            int maxDims = config.hybrid() != null ? 3 : 2;   // a hybrid's convolution and stacked experts
            if (rows.shape().length > maxDims) {
                throw new ModelFormatException(t.file(), "tensor " + name, "shape " + t.shapeString() + " must have one "
                        + (maxDims == 2 ? "or two" : "to " + maxDims) + " dimensions");
            }
            if (config.canonicalName(name).equals("lm_head.weight") && config.tieWordEmbeddings()) continue;   // tied: the embedding is the output
            List<long[]> allowed = config.allowedShapes(name, expected);
            if (!allowed.isEmpty() && allowed.stream().noneMatch(a -> Arrays.equals(a, rows.shape()))) {
                throw new ModelFormatException(t.file(), "tensor " + name, "shape " + Arrays.toString(rows.shape())
                        + " does not match config.json, which implies " + String.join(" or ", allowed.stream().map(Arrays::toString).toList()));
            }
            tensors.add(rows);
        }
        Set<String> names = new HashSet<>();
        tensors.forEach(x -> names.add(x.name()));
        String missing = config.missingTensor(names, expected);
        if (missing != null) {
            throw new ModelFormatException(folder, "tensor " + missing, "missing from the folder's safetensors files (config.json's "
                    + config.modelType() + " with " + config.layers() + " layers needs it)");
        }
    }

    static FolderSource open(Path folder) throws IOException {
        HfConfig hf = ConfigJson.readHf(folder);
        ConfigJson config = ConfigJson.fromHf(hf);
        if (!SafetensorsShards.present(folder)) {
            throw new ModelFormatException(folder, "weights", "no model.safetensors, model.safetensors.index.json or *.safetensors file in the folder");
        }
        SafetensorsShards shards = SafetensorsShards.open(folder);
        try {
            return new FolderSource(folder, config, shards, hf.quantization());
        } catch (RuntimeException | Error e) {
            shards.close();
            throw e;
        }
    }

    @Override public Path path() { return folder; }

    @Override public ConfigJson config() { return config; }

    @Override public List<TensorRows> tensors() { return tensors; }

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
        return GgufTokenizerMetadata.fromFolder(folder, config.vocabSize(), config.bosTokenId(), config.eosTokenIds());
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
