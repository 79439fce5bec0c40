package dev.forkpoint.convert;

import dev.forkpoint.format.gguf.MetadataValue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** Test access to the converter's {@code tokenizer.ggml.*} metadata of a Hugging Face folder's tokenizer.json. */
public final class TokenizerMetadataForTests {
    private TokenizerMetadataForTests() {}

    /** The converter's tokenizer metadata for {@code folder}, given the model's vocabulary size, BOS (or −1) and EOS ids. */
    public static Map<String, MetadataValue> fromFolder(Path folder, int vocabSize, int bos, List<Integer> eos) throws IOException {
        var config = new ConfigJson("qwen3", 1, 1, 1, 1, 1, 1, vocabSize, 1, 1e-6f, 10000.0, null, false, "float32", bos, eos);
        return TokenizerMetadata.fromFolder(folder, config);
    }
}
