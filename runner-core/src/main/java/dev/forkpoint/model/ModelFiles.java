package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;

/**
 * An opened model in one of the formats Forkpoint reads, everything an engine needs from it: the architecture, its
 * hyper-parameters, the tensors, the tokenizer and the chat template. A GGUF file, or a Hugging Face / mlx-community
 * folder (config.json, safetensors, tokenizer files), which also stands for Ollama's safetensors models and Hugging
 * Face cache snapshots once resolved to a folder. Closing it unmaps the tensors.
 */
public sealed interface ModelFiles extends AutoCloseable permits GgufModelFiles, SafetensorsModelFiles {

    /** Opens a GGUF file or a model folder, telling them apart by what {@code path} is. */
    static ModelFiles open(Path path) throws IOException {
        if (Files.isDirectory(path)) return SafetensorsModelFiles.open(path);
        if (!Files.isRegularFile(path)) throw new ModelFormatException(path, "model", "no such file or folder");
        byte[] magic = new byte[4];
        try (InputStream in = Files.newInputStream(path)) {
            int n = in.readNBytes(magic, 0, 4);
            if (n == 4 && magic[0] == '{') return SafetensorsModelFiles.openOllamaManifest(path);
        }
        return GgufModelFiles.open(path);
    }

    /** The file or folder the user named. */
    Path path();

    /** The files whose bytes are the model (for its digest and cache identity), in a fixed order. */
    List<Path> contentFiles();

    /** A display name: {@code general.name}, or the folder's (repository's) name. */
    String displayName();

    Architecture.Spec spec();

    ModelConfig config();

    ModelTensors tensors();

    Tokenizer tokenizer();

    /** The Jinja chat template, or null when the model has none. */
    String chatTemplate();

    /** How an embedding pools the final hidden states ({@link Pooling}: the model's own, else the last token). */
    Pooling pooling();

    /** Tensor count per type ("Q4_0" → 112, "affine 4-bit g64" → 112). */
    Map<String, Integer> tensorTypes();

    long parameterCount();

    /** Builds the architecture's graph over the tensors on {@code backend} (which first refuses one it cannot run). */
    default Architecture load(Backend backend, IntConsumer tensorLoaded) {
        backend.checkArchitecture(spec().name());
        return spec().load(config(), tensors(), backend, tensorLoaded);
    }

    @Override
    void close();
}
