package dev.forkpoint.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The Qwen2 folder (vocab.json + merges.txt) and Llama 3's tiktoken file, loaded by us, against the Hugging Face
 * library running the tokenizer.json their official conversions produce (written here: NFC + the Qwen2 split +
 * byte level; the Llama 3 split + byte level, ignore_merges, merges from the ranks, Meta's special tokens).
 */
class HfConvertedReferenceTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final int TEXTS = 600;

    @TempDir
    Path dir;

    private static ObjectNode type(String type) {
        return MAPPER.createObjectNode().put("type", type);
    }

    private static ObjectNode byteLevelSplit(String regex) {
        ObjectNode split = type("Split").put("behavior", "Isolated").put("invert", false);
        split.set("pattern", MAPPER.createObjectNode().put("Regex", regex));
        ObjectNode seq = type("Sequence");
        seq.set("pretokenizers", MAPPER.createArrayNode().add(split)
                .add(type("ByteLevel").put("add_prefix_space", false).put("trim_offsets", false).put("use_regex", false)));
        return seq;
    }

    private static ObjectNode model(Map<String, Integer> vocab, List<String> merges, boolean ignoreMerges) {
        ObjectNode model = type("BPE").put("byte_fallback", false).put("fuse_unk", false).put("ignore_merges", ignoreMerges);
        ObjectNode v = model.putObject("vocab");
        vocab.entrySet().stream().sorted(Map.Entry.comparingByValue()).forEach(e -> v.put(e.getKey(), e.getValue()));
        ArrayNode m = model.putArray("merges");
        merges.forEach(m::add);
        return model;
    }

    private static ObjectNode added(int id, String content) {
        return MAPPER.createObjectNode().put("id", id).put("content", content).put("single_word", false)
                .put("lstrip", false).put("rstrip", false).put("normalized", false).put("special", true);
    }

    private static void compare(Tokenizer ours, Path tokenizerJson, String name) throws IOException {
        try (HuggingFaceTokenizer reference = HuggingFaceTokenizer.newInstance(tokenizerJson, Map.of("truncation", "false", "padding", "false"))) {
            List<String> corpus = new ArrayList<>(TokenizerCorpus.generate(name.hashCode(), TEXTS));
            corpus.addAll(List.of("<|im_start|>system\nhi<|im_end|>", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>"));
            for (String text : corpus) {
                for (boolean addSpecial : new boolean[]{false, true}) {
                    int[] expected = Arrays.stream(reference.encode(text, addSpecial, false).getIds()).mapToInt(l -> (int) l).toArray();
                    int[] actual = ours.encode(text, addSpecial, true);
                    assertArrayEquals(expected, actual, () -> name + " addSpecial=" + addSpecial + " " + TokenizerCorpus.escape(text)
                            + "\n expected " + Arrays.toString(expected) + "\n actual   " + Arrays.toString(actual));
                    assertEquals(reference.decode(Arrays.stream(expected).asLongStream().toArray(), true), ours.decode(expected),
                            () -> name + " decode of " + TokenizerCorpus.escape(text));
                }
            }
        }
    }

    @Test
    void qwen2FolderMatchesItsTokenizerJson() throws IOException {
        Path folder = TestData.shared("tokenizers/qwen2");
        Map<String, Integer> vocab = MAPPER.readValue(folder.resolve("vocab.json").toFile(),
                MAPPER.getTypeFactory().constructMapType(Map.class, String.class, Integer.class));
        List<String> merges = Files.readAllLines(folder.resolve("merges.txt"), StandardCharsets.UTF_8).stream()
                .filter(l -> !l.isEmpty() && !l.startsWith("#version")).toList();
        ObjectNode root = MAPPER.createObjectNode();
        ArrayNode added = root.putArray("added_tokens");
        added.add(added(151643, "<|endoftext|>")).add(added(151644, "<|im_start|>")).add(added(151645, "<|im_end|>"));
        root.set("normalizer", type("NFC"));
        root.set("pre_tokenizer", byteLevelSplit(TokenizerFiles.QWEN2_PATTERN));
        root.set("post_processor", type("ByteLevel").put("add_prefix_space", false).put("trim_offsets", false).put("use_regex", false));
        root.set("decoder", type("ByteLevel").put("add_prefix_space", false).put("trim_offsets", false).put("use_regex", false));
        root.set("model", model(vocab, merges, false));
        Path file = dir.resolve("qwen2.tokenizer.json");
        MAPPER.writeValue(file.toFile(), root);
        compare(Tokenizer.fromPath(folder), file, "qwen2");
    }

    @Test
    void llama3TiktokenMatchesItsTokenizerJson() throws IOException {
        Path model = TestData.shared("tokenizers/llama3/tokenizer.model");
        Map<String, Integer> vocab = new java.util.HashMap<>();
        for (String line : Files.readAllLines(model, StandardCharsets.ISO_8859_1)) {
            if (line.isBlank()) continue;
            String[] p = line.split(" ");
            vocab.put(ByteUnicode.encode(Base64.getDecoder().decode(p[0])), Integer.parseInt(p[1]));
        }
        // Every split of a token into two tokens is a merge, ranked by the token it makes (then by its parts).
        record Merge(int rank, int left, int right, String text) {}
        List<Merge> merges = new ArrayList<>();
        vocab.forEach((piece, rank) -> {
            for (int k = 1; k < piece.length(); k++) {
                Integer l = vocab.get(piece.substring(0, k)), r = vocab.get(piece.substring(k));
                if (l != null && r != null) merges.add(new Merge(rank, l, r, piece.substring(0, k) + " " + piece.substring(k)));
            }
        });
        merges.sort(Comparator.comparingInt(Merge::rank).thenComparingInt(Merge::left).thenComparingInt(Merge::right));
        ObjectNode root = MAPPER.createObjectNode();
        ArrayNode added = root.putArray("added_tokens");
        List<String> specials = TokenizerFiles.llama3SpecialTokens();
        for (int i = 0; i < specials.size(); i++) added.add(added(128000 + i, specials.get(i)));
        root.set("pre_tokenizer", byteLevelSplit(TokenizerFiles.LLAMA3_PATTERN));
        ObjectNode template = type("TemplateProcessing");
        template.putArray("single").add(MAPPER.createObjectNode().set("SpecialToken", MAPPER.createObjectNode().put("id", "<|begin_of_text|>").put("type_id", 0)))
                .add(MAPPER.createObjectNode().set("Sequence", MAPPER.createObjectNode().put("id", "A").put("type_id", 0)));
        template.putArray("pair");
        ObjectNode bos = template.putObject("special_tokens").putObject("<|begin_of_text|>").put("id", "<|begin_of_text|>");
        bos.putArray("ids").add(128000);
        bos.putArray("tokens").add("<|begin_of_text|>");
        root.set("post_processor", template);
        root.set("decoder", type("ByteLevel").put("add_prefix_space", true).put("trim_offsets", true).put("use_regex", true));
        root.set("model", model(vocab, merges.stream().map(Merge::text).toList(), true));
        Path file = dir.resolve("llama3.tokenizer.json");
        MAPPER.writeValue(file.toFile(), root);
        compare(Tokenizer.fromPath(model), file, "llama3");
    }
}
