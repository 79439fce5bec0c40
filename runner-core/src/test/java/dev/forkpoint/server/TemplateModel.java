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
 * <tool_call>}), read from the test resource chat/qwen2_5.jinja, which the tests also render independently; or
 * another template ({@link #write(Path, String, String, int)}: Qwen3's, for thinking).
 */
final class TemplateModel {
    static final String FILE = "stories260K-qwen-template.gguf";

    private TemplateModel() {}

    /** The Qwen2.5 template's source (the test resource). */
    static String qwenTemplate() {
        return resource("qwen2_5.jinja");
    }

    /** Qwen3's template (the test resource): thinks unless {@code enable_thinking} is false. */
    static String qwen3Template() {
        return resource("qwen3.jinja");
    }

    /** Qwen3's template with Qwen3.5's generation prompt: the thinking block is opened in the prompt unless turned off. */
    static String opensThinkingTemplate() {
        String t = qwen3Template();
        String end = "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}";
        if (!t.contains(end)) throw new IllegalStateException("the Qwen3 template's generation prompt changed");
        return t.replace(end, "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- else %}\n        {{- '<think>\\n' }}\n    {%- endif %}");
    }

    static String resource(String name) {
        try (InputStream in = TemplateModel.class.getResourceAsStream("/chat/" + name)) {
            if (in == null) throw new IllegalStateException("missing test resource chat/" + name);
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes the copy into {@code dir} and returns its path. */
    static Path write(Path dir) throws IOException {
        return write(dir, FILE, qwenTemplate(), 0);
    }

    /**
     * Writes a copy named {@code file} with {@code template}; {@code contextLength} &gt; 0 raises the trained context
     * the file declares (for requests whose limits need more than stories260K's 512 tokens, e.g. Anthropic's thinking
     * budget of at least 1024 below max_tokens; the output is scripted, so the weights' range does not matter).
     */
    static Path write(Path dir, String file, String template, int contextLength) throws IOException {
        Path target = dir.resolve(file);
        try (GgufFile source = GgufFile.open(TestData.shared("models/stories260K.gguf"))) {
            GgufWriter w = new GgufWriter().putAll(source.metadata());
            w.put("tokenizer.chat_template", MetadataValue.of(template));
            if (contextLength > 0) w.put("llama.context_length", MetadataValue.ofU32(contextLength));
            for (GgufTensor t : source.tensors()) w.add(new GgufWriter.TensorData(t.name(), t.type(), t.shape(), t.data()));
            w.write(target);
        }
        return target;
    }
}
