package dev.forkpoint.convert;

import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.model.ExpectedWeight;
import dev.forkpoint.model.TensorRows;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A GGUF model seen as Hugging Face weights: names mapped by the architecture's ({@link ConfigJson#names}), GGML shapes reversed to
 * row-major, block-quantised rows dequantised, and q/k rows (and biases) that the architecture's GGUF files store in
 * another order ({@link ConfigJson#ggufRowOrder}: Llama's interleaved pairs) put back into Hugging Face's order.
 */
final class GgufSource implements SourceModel {
    private final GgufFile file;
    private final ConfigJson config;
    private final List<TensorRows> tensors = new ArrayList<>();

    private GgufSource(GgufFile file) {
        this.file = file;
        this.config = ConfigJson.fromGguf(file);
        String lastLayer = "blk." + (config.layers() - 1) + ".attn_norm.weight";   // before sizing anything by the layer count
        if (file.findTensor(lastLayer).isEmpty()) {
            throw new ModelFormatException(file.path(), "tensor " + lastLayer, "missing: the model declares " + config.layers() + " layers");
        }
        Map<String, ExpectedWeight> expected = config.expectedWeights();
        for (GgufTensor t : file.tensors()) {
            if (t.name().equals("rope_freqs.weight")) continue;   // in config.json's rope_scaling
            String hf = config.names().toHf(t.name()).orElseThrow(() -> new ModelFormatException(file.path(), "tensor " + t.name(),
                    "has no Hugging Face equivalent in a " + config.modelType() + " model; cannot convert it"));
            if (t.type() != GgmlType.F32 && t.type() != GgmlType.F16 && t.type() != GgmlType.BF16 && !t.type().supported()) {
                throw new ModelFormatException(file.path(), "tensor " + t.name(), "type " + t.type()
                        + " cannot be converted; supported: " + GgmlType.supportedNames());
            }
            if (t.shape().length > 2) throw new ModelFormatException(file.path(), "tensor " + t.name(), "has " + t.shape().length + " dimensions; at most 2 expected");
            long[] shape = ConfigJson.reversed(t.shape());
            ExpectedWeight w = expected.get(t.name());
            if (w != null && !w.fits(t.shape())) {
                throw new ModelFormatException(file.path(), "tensor " + t.name(), "shape " + Arrays.toString(shape)
                        + " (row-major) does not match the metadata, which implies "
                        + String.join(" or ", w.shapes().stream().map(s -> Arrays.toString(ConfigJson.reversed(s))).toList()));
            }
            GgmlType floatType = t.type() == GgmlType.F32 || t.type() == GgmlType.F16 || t.type() == GgmlType.BF16 ? t.type() : null;
            tensors.add(new TensorRows(hf, shape, floatType, file.path() + ": " + t.name(), reader(t, hf)));
        }
    }

    static GgufSource open(Path path) throws IOException {
        return GgufFile.open(path, GgufSource::new);
    }

    private TensorRows.RowReader reader(GgufTensor t, String hf) {
        int cols = t.rowLength();
        long rowBytes = t.type().bytesFor(cols);
        TensorRows.RowReader plain = (row, dst) -> Quantization.dequantize(t.type(), t.data(), row * rowBytes, dst, 0, cols);
        int[] hfRowOf = config.ggufRowOrder(hf);   // GGUF row i holds HF row hfRowOf[i]
        if (hfRowOf == null) return plain;
        int[] ggufRowOf = new int[hfRowOf.length];
        for (int i = 0; i < hfRowOf.length; i++) ggufRowOf[hfRowOf[i]] = i;
        if (t.shape().length == 1) {   // a bias: its elements are in row order
            return (row, dst) -> {
                float[] g = new float[cols];
                plain.read(0, g);
                for (int i = 0; i < cols; i++) dst[hfRowOf[i]] = g[i];
            };
        }
        return (row, dst) -> plain.read(ggufRowOf[row], dst);
    }

    @Override public Path path() { return file.path(); }

    @Override public ConfigJson config() { return config; }

    @Override public List<TensorRows> tensors() { return tensors; }

    @Override
    public void writeTokenizerFiles(Path folder) throws IOException {
        TokenizerJson.write(file, folder);
    }

    @Override
    public Map<String, MetadataValue> tokenizerMetadata() {
        Map<String, MetadataValue> m = new LinkedHashMap<>();
        file.metadata().forEach((k, v) -> { if (k.startsWith("tokenizer.")) m.put(k, v); });
        return m;
    }

    @Override
    public void close() {
        file.close();
    }
}
