package dev.forkpoint.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Pipeline features the shipped tokenizer.json files do not use (Metaspace pre-tokenizer, a Split regex with
 * ignore_merges, merges as arrays, added tokens with lstrip/rstrip, non-special and normalized added tokens),
 * checked against the Hugging Face library on variants of those files.
 */
class HfVariantsTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    @TempDir
    Path dir;

    private Path variant(String base, String name, Consumer<ObjectNode> edit) throws IOException {
        ObjectNode root = (ObjectNode) MAPPER.readTree(TestData.shared("tokenizers/hf/" + base + ".tokenizer.json").toFile());
        edit.accept(root);
        Path file = dir.resolve(name + ".tokenizer.json");
        MAPPER.writeValue(file.toFile(), root);
        return file;
    }

    private static void compare(Path file, int texts) throws IOException {
        Tokenizer ours = Tokenizer.fromPath(file);
        try (HuggingFaceTokenizer reference = HuggingFaceTokenizer.newInstance(file, Map.of("truncation", "false", "padding", "false"))) {
            List<String> corpus = TokenizerCorpus.generate(file.getFileName().toString().hashCode(), texts);
            corpus = new java.util.ArrayList<>(corpus);
            corpus.addAll(List.of("a <tool>  b", "<tool>", " <tool> ", "x<tool>y", "NOTE: NOTE:x", "<|im_start|>  hi",
                    "hi <|im_start|>", "  lead", "trail  ", "<s> <s>", "a  b   c", "cat", "a cat b", "cats", "concat", "cat_",
                    "_cat", "über cat", "écat", "1cat", "cat1", "catcat cat", "猫cat", "cat.", "-cat-", "cát cat́"));
            for (String text : corpus) {
                for (boolean addSpecial : new boolean[]{false, true}) {
                    int[] expected = Arrays.stream(reference.encode(text, addSpecial, false).getIds()).mapToInt(l -> (int) l).toArray();
                    int[] actual = ours.encode(text, addSpecial, true);
                    assertArrayEquals(expected, actual, () -> file.getFileName() + " addSpecial=" + addSpecial + " "
                            + TokenizerCorpus.escape(text) + "\n expected " + Arrays.toString(expected) + "\n actual   " + Arrays.toString(actual));
                    String decoded = reference.decode(Arrays.stream(expected).asLongStream().toArray(), true);
                    assertEquals(decoded, ours.decode(expected), () -> file.getFileName() + " decode of " + TokenizerCorpus.escape(text));
                }
            }
        }
    }

    private static ObjectNode added(int id, String content, boolean special, boolean normalized, boolean lstrip, boolean rstrip) {
        ObjectNode t = MAPPER.createObjectNode();
        t.put("id", id).put("content", content).put("single_word", false).put("lstrip", lstrip).put("rstrip", rstrip)
                .put("normalized", normalized).put("special", special);
        return t;
    }

    private static void mergesAsArrays(ObjectNode root) {
        ArrayNode merges = (ArrayNode) root.get("model").get("merges");
        ArrayNode arrays = MAPPER.createArrayNode();
        merges.forEach(m -> {
            String[] p = m.textValue().split(" ");
            arrays.add(MAPPER.createArrayNode().add(p[0]).add(p[1]));
        });
        ((ObjectNode) root.get("model")).set("merges", arrays);
    }

    @Test
    void metaspaceFirstWithArrayMergesAndStrippingAddedTokens() throws IOException {
        compare(variant("tinyllama", "metaspace-first", root -> {
            root.putNull("normalizer");
            root.set("pre_tokenizer", MAPPER.createObjectNode().put("type", "Metaspace").put("replacement", "\u2581")
                    .put("prepend_scheme", "first").put("split", false));
            root.set("decoder", MAPPER.createObjectNode().put("type", "Sequence").set("decoders", MAPPER.createArrayNode()
                    .add(MAPPER.createObjectNode().put("type", "Metaspace").put("replacement", "\u2581").put("prepend_scheme", "first").put("split", false))
                    .add(MAPPER.createObjectNode().put("type", "ByteFallback"))
                    .add(MAPPER.createObjectNode().put("type", "Fuse"))));
            mergesAsArrays(root);
            ((ArrayNode) root.get("added_tokens")).add(added(32000, "<tool>", false, false, true, true));
            // special tokens as newer Llama files have them: matched on the raw text
            root.get("added_tokens").forEach(t -> { if (t.get("special").asBoolean()) ((ObjectNode) t).put("normalized", false); });
        }), 400);
    }

    @Test
    void metaspaceAlwaysSplitting() throws IOException {
        compare(variant("tinyllama", "metaspace-always", root -> {
            root.putNull("normalizer");
            root.set("pre_tokenizer", MAPPER.createObjectNode().put("type", "Metaspace").put("replacement", "\u2581")
                    .put("prepend_scheme", "always").put("split", true));
            ((ArrayNode) root.get("added_tokens")).add(added(32000, "NOTE:", false, true, false, false));
        }), 400);
    }

    @Test
    void splitRegexWithIgnoreMergesAndSpecialAddedTokens() throws IOException {
        compare(variant("gpt2", "llama3-split", root -> {
            root.set("pre_tokenizer", MAPPER.createObjectNode().put("type", "Sequence").set("pretokenizers", MAPPER.createArrayNode()
                    .add(MAPPER.createObjectNode().put("type", "Split").put("behavior", "Isolated").put("invert", false)
                            .set("pattern", MAPPER.createObjectNode().put("Regex", TokenizerFiles.LLAMA3_PATTERN)))
                    .add(MAPPER.createObjectNode().put("type", "ByteLevel").put("add_prefix_space", false).put("trim_offsets", true).put("use_regex", false))));
            ((ObjectNode) root.get("model")).put("ignore_merges", true);
            ((ArrayNode) root.get("added_tokens")).add(added(50257, "<|im_start|>", true, false, false, true));
            ((ArrayNode) root.get("added_tokens")).add(added(50258, "<tool>", false, false, true, false));
            ObjectNode singleWord = added(50259, "cat", false, false, false, false);
            singleWord.put("single_word", true);
            ((ArrayNode) root.get("added_tokens")).add(singleWord);
            ((ObjectNode) root.get("model").get("vocab")).put("<|im_start|>", 50257).put("<tool>", 50258).put("cat", 50259);
            root.set("post_processor", MAPPER.createObjectNode().put("type", "TemplateProcessing")
                    .<ObjectNode>set("single", MAPPER.createArrayNode()
                            .add(MAPPER.createObjectNode().set("SpecialToken", MAPPER.createObjectNode().put("id", "<|endoftext|>").put("type_id", 0)))
                            .add(MAPPER.createObjectNode().set("Sequence", MAPPER.createObjectNode().put("id", "A").put("type_id", 0)))
                            .add(MAPPER.createObjectNode().set("SpecialToken", MAPPER.createObjectNode().put("id", "<|im_start|>").put("type_id", 0))))
                    .<ObjectNode>set("pair", MAPPER.createArrayNode())
                    .set("special_tokens", MAPPER.createObjectNode()
                            .<ObjectNode>set("<|endoftext|>", MAPPER.createObjectNode().put("id", "<|endoftext|>").<ObjectNode>set("ids", MAPPER.createArrayNode().add(50256)).set("tokens", MAPPER.createArrayNode().add("<|endoftext|>")))
                            .set("<|im_start|>", MAPPER.createObjectNode().put("id", "<|im_start|>").<ObjectNode>set("ids", MAPPER.createArrayNode().add(50257)).set("tokens", MAPPER.createArrayNode().add("<|im_start|>")))));
        }), 400);
    }

    @Test
    void parseSpecialFalseKeepsSpecialTextButCutsOtherAddedTokens() throws IOException {
        Tokenizer t = Tokenizer.fromPath(TestData.shared("tokenizers/hf/gpt2.tokenizer.json"));
        int[] parsed = t.encode("a<|endoftext|>b", false, true);
        assertArrayEquals(new int[]{64, 50256, 65}, parsed); // "a"=64, "b"=65 in GPT-2's byte order vocabulary
        int[] plain = t.encode("a<|endoftext|>b", false, false);
        assertEquals("a<|endoftext|>b", t.decode(plain));
        assertEquals(-1, Arrays.stream(plain).filter(id -> id == 50256).findAny().orElse(-1));
    }

    @Test
    void folderConfigsOverrideTheTokenizerFile() throws IOException {
        Path folder = Files.createDirectories(dir.resolve("model"));
        Files.copy(TestData.shared("tokenizers/hf/tinyllama.tokenizer.json"), folder.resolve("tokenizer.json"));
        Tokenizer plain = Tokenizer.fromPath(folder);
        assertEquals(1, plain.encode("hi", true, true)[0]);
        assertEquals(false, plain.addsEos());
        Files.writeString(folder.resolve("tokenizer_config.json"), """
                {"add_bos_token": false, "add_eos_token": true, "bos_token": {"content": "<s>"}, "eos_token": "</s>"}""");
        Files.writeString(folder.resolve("generation_config.json"), """
                {"eos_token_id": [2, 0]}""");
        Tokenizer t = Tokenizer.fromPath(folder);
        int[] ids = t.encode("hi", true, true);
        assertEquals(2, ids[ids.length - 1]);
        assertEquals(false, t.addsBos());
        assertEquals(true, t.addsEos());
        assertEquals(2, t.eosId());
        assertEquals(true, t.isEndOfGeneration(0));
        assertEquals(false, t.isEndOfGeneration(1));
    }
}
