package dev.forkpoint;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A long-context hybrid model for cache tests: the tiny random Qwen3.5 (dense or MoE: Gated DeltaNet ×3 + gated
 * attention, GPT-2 tokenizer) from {@code ../shared/models}, its weights linked in place, with config.json's
 * {@code max_position_embeddings} raised to {@code context} and, optionally, Qwen2.5's ChatML template as its chat
 * template. Nothing in its math depends on the trained context, so every result is the tiny model's own.
 */
public final class HybridTestModel {
    private HybridTestModel() {}

    public static Path write(Path dir, String variant, int context, boolean chatTemplate) throws IOException {
        Path source = TestData.shared("models/qwen35-tiny-" + variant);
        Path target = dir.resolve("qwen35-" + variant + "-" + context + (chatTemplate ? "-chat" : ""));
        Files.createDirectories(target);
        ObjectMapper json = new ObjectMapper();
        ObjectNode config = (ObjectNode) json.readTree(source.resolve("config.json").toFile());
        ((ObjectNode) config.get("text_config")).put("max_position_embeddings", context);
        json.writeValue(target.resolve("config.json").toFile(), config);
        for (String f : new String[] {"model.safetensors", "tokenizer.json", "generation_config.json"}) {
            Files.deleteIfExists(target.resolve(f));
            Files.createSymbolicLink(target.resolve(f), source.resolve(f).toAbsolutePath());
        }
        ObjectNode tokenizerConfig = (ObjectNode) json.readTree(source.resolve("tokenizer_config.json").toFile());
        tokenizerConfig.put("model_max_length", context);
        if (chatTemplate) tokenizerConfig.put("chat_template", chatMl());
        json.writeValue(target.resolve("tokenizer_config.json").toFile(), tokenizerConfig);
        return target;
    }

    /** Qwen2.5's template (the test resource {@code chat/qwen2_5.jinja}). */
    public static String chatMl() {
        try (InputStream in = HybridTestModel.class.getResourceAsStream("/chat/qwen2_5.jinja")) {
            if (in == null) throw new IllegalStateException("missing test resource chat/qwen2_5.jinja");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
