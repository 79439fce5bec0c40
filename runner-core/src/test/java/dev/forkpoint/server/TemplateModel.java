package dev.forkpoint.server;

import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A copy of stories260K whose metadata adds {@code tokenizer.chat_template}: Qwen2.5's template (tools, {@code
 * <tool_call>}), read from the test resource chat/qwen2_5.jinja, which the tests also render independently.
 */
final class TemplateModel {
    static final String FILE = "stories260K-qwen-template.gguf";

    private TemplateModel() {}

    /** The Qwen2.5 template's source (the test resource). */
    static String qwenTemplate() {
        try (InputStream in = TemplateModel.class.getResourceAsStream("/chat/qwen2_5.jinja")) {
            if (in == null) throw new IllegalStateException("missing test resource chat/qwen2_5.jinja");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes the copy into {@code dir} and returns its path. */
    static Path write(Path dir) throws IOException {
        Path target = dir.resolve(FILE);
        try (GgufFile source = GgufFile.open(TestData.shared("models/stories260K.gguf"))) {
            GgufWriter w = new GgufWriter().putAll(source.metadata());
            w.put("tokenizer.chat_template", MetadataValue.of(qwenTemplate()));
            for (GgufTensor t : source.tensors()) w.add(new GgufWriter.TensorData(t.name(), t.type(), t.shape(), t.data()));
            w.write(target);
        }
        return target;
    }
}
