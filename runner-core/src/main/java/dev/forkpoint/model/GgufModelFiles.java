package dev.forkpoint.model;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tokenizer.Tokenizer;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A GGUF model file: metadata, tensors and tokenizer all in the one file. */
final class GgufModelFiles implements ModelFiles {
    private final GgufFile file;
    private final Architecture.Spec spec;
    private final ModelConfig config;
    private final Tokenizer tokenizer;
    private final Pooling pooling;

    private GgufModelFiles(GgufFile file) {
        this.file = file;
        this.spec = Architectures.forFile(file);
        this.config = ModelConfig.fromGguf(file, spec);
        this.tokenizer = Tokenizer.fromGguf(file);
        this.pooling = Pooling.fromGguf(file, spec.name());
    }

    static GgufModelFiles open(Path path) throws IOException {
        return GgufFile.open(path, GgufModelFiles::new);
    }

    public Path path() { return file.path(); }
    public List<Path> contentFiles() { return List.of(file.path()); }
    public String displayName() { return file.getString("general.name", ""); }
    public Architecture.Spec spec() { return spec; }
    public ModelConfig config() { return config; }
    public ModelTensors tensors() { return new GgufTensors(file); }
    public Tokenizer tokenizer() { return tokenizer; }
    public Pooling pooling() { return pooling; }
    public String chatTemplate() { return file.getString("tokenizer.chat_template", null); }

    public Map<String, Integer> tensorTypes() {
        Map<String, Integer> types = new TreeMap<>();
        for (GgufTensor t : file.tensors()) types.merge(t.type().name(), 1, Integer::sum);
        return types;
    }

    public long parameterCount() {
        long n = 0;
        for (GgufTensor t : file.tensors()) n += t.elementCount();
        return n;
    }

    public void close() { file.close(); }
}
