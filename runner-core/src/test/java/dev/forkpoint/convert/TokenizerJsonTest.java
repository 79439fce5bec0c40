package dev.forkpoint.convert;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tokenizer.GgufTokenizerMetadata;
import dev.forkpoint.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The tokenizer.json written from a GGUF vocabulary encodes like the GGUF tokenizer (Forkpoint's, which follows
 * llama.cpp) and like the Hugging Face tokenizers library reading that tokenizer.json, on a few hundred varied strings;
 * and the reverse mapping (tokenizer.json to GGUF metadata) gives a tokenizer that encodes like the library too.
 */
class TokenizerJsonTest {
    @TempDir
    Path tmp;

    /** Varied text: stories words, punctuation, digits, runs of spaces and newlines, accents, CJK, emoji, bytes. */
    static List<String> corpus() {
        List<String> out = new ArrayList<>(List.of("", " ", "  ", "\n", "Hello world", " Hello", "Once upon a time, there was a little girl named Lily.",
                "She said: \"Let's go!\"", "1234567890 12 3.14", "don't won't I'll we've", "tabs\tand\nnewlines\n\n",
                "café naïve résumé", "日本語のテキスト", "emoji 🙂🚀 done", "ÅÄÖ åäö", "a  b   c    d", "   leading", "trailing   ",
                "x\u0000y", "Ω≈ç√∫", "The dog's ball was red, and the cat's was blue."));
        String[] words = {"the", "a", "Lily", "Tom", "dog", "cat", "park", "happy", "played", "big", "ball", "sun", "tree",
                "said", "mom", "went", "to", "and", "was", "it", "he", "she", "they", "Once", "upon", "time", "little"};
        String[] seps = {" ", "  ", ", ", ". ", "! ", "? ", "\n", " - ", "'s ", "\"", "(", ")", ": ", "; ", "\t", "  \n "};
        String[] odd = {"é", "ß", "中", "🙂", "0", "42", "1999", "#", "$", "%", "&", "*", "~", "|", "\\", "ø", "ñ"};
        Random r = new Random(20240601);
        while (out.size() < 320) {
            var sb = new StringBuilder();
            int n = 1 + r.nextInt(14);
            for (int i = 0; i < n; i++) {
                int k = r.nextInt(10);
                if (k < 7) sb.append(words[r.nextInt(words.length)]);
                else sb.append(odd[r.nextInt(odd.length)]);
                if (r.nextInt(5) > 0) sb.append(seps[r.nextInt(seps.length)]);
            }
            if (r.nextInt(6) == 0) sb.insert(0, ' ');
            out.add(sb.toString());
        }
        return out;
    }

    private static int[] hf(HuggingFaceTokenizer t, String text, boolean special) {
        return Arrays.stream(t.encode(text, special, false).getIds()).mapToInt(l -> (int) l).toArray();
    }

    @Test
    void storiesTokenizerJsonEncodesLikeTheGgufTokenizerAndHuggingFace() throws Exception {
        Path gguf = TestData.shared("models/stories260K.gguf");
        try (GgufFile f = GgufFile.open(gguf)) {
            TokenizerJson.write(f, tmp);
            Tokenizer ours = Tokenizer.fromGguf(f);
            try (var reference = HuggingFaceTokenizer.newInstance(tmp.resolve("tokenizer.json"), Map.of("truncation", "false", "padding", "false"))) {
                for (String text : corpus()) {
                    assertArrayEquals(ours.encode(text, false, true), hf(reference, text, false), () -> "text " + quote(text));
                    assertArrayEquals(ours.encode(text, true, true), hf(reference, text, true), () -> "with BOS: " + quote(text));
                }
            }
        }
        var config = new com.fasterxml.jackson.databind.ObjectMapper().readTree(tmp.resolve("tokenizer_config.json").toFile());
        assertEquals("<s>", config.get("bos_token").asText());
        assertEquals("</s>", config.get("eos_token").asText());
        assertEquals(true, config.get("add_bos_token").asBoolean());
        assertEquals(false, config.get("add_eos_token").asBoolean());
        var gen = new com.fasterxml.jackson.databind.ObjectMapper().readTree(tmp.resolve("generation_config.json").toFile());
        assertEquals(2, gen.get("eos_token_id").asInt());
    }

    /**
     * GPT-2's Hugging Face tokenizer.json to GGUF metadata (model gpt2, pre "gpt-2", merges) and back to tokenizer.json:
     * Forkpoint's GGUF tokenizer and the library on the written file both encode like the library on the original.
     */
    @Test
    void byteLevelVocabularyRoundTrips() throws Exception {
        Path original = TestData.shared("tokenizers/hf/gpt2.tokenizer.json");
        Path folder = tmp.resolve("gpt2");
        Files.createDirectories(folder);
        Files.copy(original, folder.resolve("tokenizer.json"));
        Map<String, MetadataValue> meta = GgufTokenizerMetadata.fromFolder(folder, 50257, -1, List.of());
        assertEquals("gpt2", ((MetadataValue.Str) meta.get("tokenizer.ggml.model")).value());
        assertEquals("gpt-2", ((MetadataValue.Str) meta.get("tokenizer.ggml.pre")).value());
        Path gguf = tmp.resolve("gpt2.gguf");
        new GgufWriter().put("general.architecture", MetadataValue.of("llama")).putAll(meta).write(gguf);
        Path rewritten = tmp.resolve("rewritten");
        Files.createDirectories(rewritten);
        try (GgufFile f = GgufFile.open(gguf);
             var reference = HuggingFaceTokenizer.newInstance(original, Map.of("truncation", "false", "padding", "false"))) {
            Tokenizer ours = Tokenizer.fromGguf(f);
            TokenizerJson.write(f, rewritten);
            try (var again = HuggingFaceTokenizer.newInstance(rewritten.resolve("tokenizer.json"), Map.of("truncation", "false", "padding", "false"))) {
                for (String text : corpus()) {
                    if (text.indexOf('\u0000') >= 0) continue;
                    int[] expected = hf(reference, text, false);
                    assertArrayEquals(expected, ours.encode(text, false, true), () -> "ours: " + quote(text));
                    assertArrayEquals(expected, hf(again, text, false), () -> "rewritten: " + quote(text));
                }
            }
        }
    }

    /**
     * llama-2-tiny-random carries Llama 2's SentencePiece vocabulary, which TinyLlama shares: the vocabulary and the
     * 61,249 merges derived from its scores equal those of Hugging Face's own TinyLlama tokenizer.json.
     */
    @Test
    void llama2MergesEqualHuggingFacesConversion() throws Exception {
        Path gguf = TestData.shared("models/llama-2-tiny-random.gguf");
        Path reference = TestData.shared("tokenizers/hf/tinyllama.tokenizer.json");
        try (GgufFile f = GgufFile.open(gguf)) {
            TokenizerJson.write(f, tmp);
        }
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var ours = json.readTree(tmp.resolve("tokenizer.json").toFile()).get("model");
        var theirs = json.readTree(reference.toFile()).get("model");
        assertEquals(theirs.get("vocab"), ours.get("vocab"));
        assertEquals(theirs.get("merges").size(), ours.get("merges").size());
        for (int i = 0; i < theirs.get("merges").size(); i++) {
            assertEquals(theirs.get("merges").get(i), ours.get("merges").get(i), "merge " + i);
        }
        assertEquals(theirs.get("byte_fallback"), ours.get("byte_fallback"));
        assertEquals(theirs.get("unk_token"), ours.get("unk_token"));
    }

    private static String quote(String s) {
        return "\"" + s.replace("\n", "\\n").replace("\t", "\\t") + "\"";
    }
}
