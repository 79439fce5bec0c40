package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Vocabulary-only GGUF files written for tests, from tokenizer sources in the shared folder. */
final class VocabFixtures {
    static final int NORMAL = 1, CONTROL = 3, USER_DEFINED = 4;

    private VocabFixtures() {}

    /** The 256 byte characters in byte order: the token text of byte {@code b} is at index {@code b}. */
    static List<String> byteTokens() {
        List<String> tokens = new ArrayList<>();
        for (int b = 0; b < 256; b++) tokens.add(ByteUnicode.encode(new byte[]{(byte) b}));
        return tokens;
    }

    /** The lead's embedded default model vocabulary: 256 byte tokens, BOS 256, EOS 257, no merges. */
    static GgufWriter byteLevelDefault() {
        List<String> tokens = byteTokens();
        tokens.add("<|begin_of_text|>");
        tokens.add("<|end_of_text|>");
        int[] types = new int[tokens.size()];
        Arrays.fill(types, NORMAL);
        types[256] = CONTROL;
        types[257] = CONTROL;
        return gpt2("default", tokens, types, List.of())
                .put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(256))
                .put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(257))
                .put("tokenizer.ggml.add_bos_token", MetadataValue.ofBool(true));
    }

    static GgufWriter gpt2(String pre, List<String> tokens, int[] types, List<String> merges) {
        return new GgufWriter()
                .put("general.architecture", MetadataValue.of("llama"))
                .put("tokenizer.ggml.model", MetadataValue.of("gpt2"))
                .put("tokenizer.ggml.pre", MetadataValue.of(pre))
                .put("tokenizer.ggml.tokens", MetadataValue.ofStrings(tokens))
                .put("tokenizer.ggml.token_type", MetadataValue.ofI32s(types))
                .put("tokenizer.ggml.merges", MetadataValue.ofStrings(merges));
    }

    /** Qwen2's byte-level BPE from its Hugging Face vocab.json, merges.txt and added tokens (all control). */
    static GgufWriter qwen2() throws IOException {
        Path dir = TestData.shared("tokenizers/qwen2");
        ObjectMapper json = new ObjectMapper();
        Map<Integer, String> byId = new HashMap<>();
        json.readTree(dir.resolve("vocab.json").toFile()).properties().forEach(e -> byId.put(e.getValue().asInt(), e.getKey()));
        int normal = byId.size();
        JsonNode added = json.readTree(dir.resolve("added_tokens.json").toFile());
        added.properties().forEach(e -> byId.put(e.getValue().asInt(), e.getKey()));
        List<String> tokens = new ArrayList<>();
        int[] types = new int[byId.size()];
        for (int id = 0; id < byId.size(); id++) {
            tokens.add(byId.get(id));
            types[id] = id < normal ? NORMAL : CONTROL;
        }
        List<String> merges = Files.readAllLines(dir.resolve("merges.txt"), StandardCharsets.UTF_8).stream()
                .filter(l -> !l.startsWith("#version") && !l.isEmpty()).toList();
        return gpt2("qwen2", tokens, types, merges)
                .put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(151645))
                .put("tokenizer.ggml.padding_token_id", MetadataValue.ofU32(151643))
                .put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(151643))
                .put("tokenizer.ggml.add_bos_token", MetadataValue.ofBool(false));
    }

    /** Llama 3's special tokens at 128000…128255 (only the named ones matter to the tests). */
    static final Map<Integer, String> LLAMA3_SPECIAL = Map.of(
            128000, "<|begin_of_text|>", 128001, "<|end_of_text|>", 128006, "<|start_header_id|>",
            128007, "<|end_header_id|>", 128009, "<|eot_id|>", 128008, "<|eom_id|>");

    /**
     * Llama 3 from its tiktoken ranks: tokens are the ranked byte strings in GPT-2 byte characters; merges are
     * every split of a token into two tokens, ordered by the rank of the merged token (tiktoken merges the pair
     * whose concatenation ranks lowest).
     */
    static GgufWriter llama3() throws IOException {
        Path model = TestData.shared("tokenizers/llama3/tokenizer.model");
        List<String> tokens = new ArrayList<>();
        Map<String, Integer> rank = new HashMap<>();
        for (String line : Files.readAllLines(model, StandardCharsets.US_ASCII)) {
            if (line.isBlank()) continue;
            String[] parts = line.split(" ");
            int r = Integer.parseInt(parts[1]);
            if (r != tokens.size()) throw new IllegalStateException("ranks out of order at " + r);
            String text = ByteUnicode.encode(Base64.getDecoder().decode(parts[0]));
            tokens.add(text);
            rank.put(text, r);
        }
        int normal = tokens.size();
        for (int id = normal; id < normal + 256; id++) {
            tokens.add(LLAMA3_SPECIAL.getOrDefault(id, "<|reserved_special_token_" + (id - normal) + "|>"));
        }
        int[] types = new int[tokens.size()];
        for (int id = 0; id < types.length; id++) types[id] = id < normal ? NORMAL : CONTROL;
        record Merge(int merged, int left, int right, String text) {}
        List<Merge> merges = new ArrayList<>();
        for (int id = 0; id < normal; id++) {
            String t = tokens.get(id);
            for (int k = 1; k < t.length(); k++) {
                Integer l = rank.get(t.substring(0, k)), r = rank.get(t.substring(k));
                if (l != null && r != null) merges.add(new Merge(id, l, r, t.substring(0, k) + " " + t.substring(k)));
            }
        }
        merges.sort(Comparator.comparingInt(Merge::merged).thenComparingInt(Merge::left).thenComparingInt(Merge::right));
        return gpt2("llama-bpe", tokens, types, merges.stream().map(Merge::text).toList())
                .put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(128000))
                .put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(128001))
                .put("tokenizer.ggml.eot_token_id", MetadataValue.ofU32(128009));
    }

    private static Path cachedQwen2, cachedLlama3;

    /** {@link #qwen2()} written once per test run (it is large to build); the file is removed at exit. */
    static synchronized Path qwen2File() throws IOException {
        if (cachedQwen2 == null) cachedQwen2 = writeTemporary(qwen2(), "qwen2");
        return cachedQwen2;
    }

    /** {@link #llama3()} written once per test run; the file is removed at exit. */
    static synchronized Path llama3File() throws IOException {
        if (cachedLlama3 == null) cachedLlama3 = writeTemporary(llama3(), "llama3");
        return cachedLlama3;
    }

    private static Path writeTemporary(GgufWriter writer, String name) throws IOException {
        Path dir = Files.createTempDirectory("forkpoint-vocab-");
        dir.toFile().deleteOnExit(); // registered first, so deleted after the file
        Path file = dir.resolve(name + ".gguf");
        file.toFile().deleteOnExit();
        writer.write(file);
        return file;
    }

    static Tokenizer open(Path file) throws IOException {
        try (GgufFile gguf = GgufFile.open(file)) {
            return Tokenizer.fromGguf(gguf);
        }
    }

    /** Writes {@code writer} into {@code dir} and builds its tokenizer. */
    static Tokenizer open(GgufWriter writer, Path dir, String name) throws IOException {
        Path file = dir.resolve(name + ".gguf");
        writer.write(file);
        try (GgufFile gguf = GgufFile.open(file)) {
            return Tokenizer.fromGguf(gguf);
        }
    }
}
