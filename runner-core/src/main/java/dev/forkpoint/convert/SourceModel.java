package dev.forkpoint.convert;

import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.model.TensorRows;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A model opened for conversion: its configuration, its weights in Hugging Face names and row order, and its
 * tokenizer, whichever format it came from. Closing it releases the mapped files.
 */
sealed interface SourceModel extends AutoCloseable permits GgufSource, FolderSource {
    Path path();

    ConfigJson config();

    /** Every weight, in the order they are written (rotary caches and GGUF's {@code rope_freqs} excluded). */
    List<TensorRows> tensors();

    /** Writes tokenizer.json, tokenizer_config.json and generation_config.json (and whatever else applies) into {@code folder}. */
    void writeTokenizerFiles(Path folder) throws IOException;

    /** The {@code tokenizer.*} GGUF metadata of the model's tokenizer. */
    Map<String, MetadataValue> tokenizerMetadata() throws IOException;

    @Override
    void close();
}
