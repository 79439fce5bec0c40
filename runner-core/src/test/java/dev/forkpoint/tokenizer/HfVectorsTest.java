package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * llama.cpp's test-tokenizer-0 vectors (produced with the Hugging Face tokenizers) for Llama 3 and Qwen2, run with
 * the tokenizers built from Meta's tiktoken file and Qwen2's vocab.json + merges.txt; and Meta's own Llama 3 test ids.
 */
class HfVectorsTest {

    private static void check(String vocab, Tokenizer tokenizer) throws IOException {
        VocabTestCases cases = VocabTestCases.load(vocab);
        assertTrue(cases.cases().size() > 40, "expected the full vector set");
        for (VocabTestCases.Case c : cases.cases()) {
            int[] ids = tokenizer.encode(c.text(), false, false);
            assertArrayEquals(c.ids(), ids, () -> vocab + ": " + quoted(c.text()) + " gave " + Arrays.toString(ids));
            assertEquals(c.text(), tokenizer.decode(ids), () -> vocab + ": round trip of " + quoted(c.text()));
        }
    }

    private static String quoted(String s) {
        return '"' + s.replace("\n", "\\n").replace("\t", "\\t") + '"';
    }

    @Test
    void llama3TiktokenMatchesLlamaBpeVectors() throws IOException {
        Tokenizer t = Tokenizer.fromPath(TestData.shared("tokenizers/llama3/tokenizer.model"));
        assertEquals("gpt2", t.model());
        assertEquals(128_256, t.vocabSize());
        check("ggml-vocab-llama-bpe.gguf", t);
    }

    @Test
    void qwen2FolderMatchesQwen2Vectors() throws IOException {
        Tokenizer t = Tokenizer.fromPath(TestData.shared("tokenizers/qwen2"));
        assertEquals("gpt2", t.model());
        check("ggml-vocab-qwen2.gguf", t);
        // Qwen2 adds no BOS; <|im_end|> (tokenizer_config eos_token) and <|endoftext|> end generation.
        assertFalse(t.addsBos());
        assertEquals(151645, t.eosId());
        assertTrue(t.isEndOfGeneration(151645));
        assertTrue(t.isEndOfGeneration(151643));
        assertArrayEquals(new int[]{151644, 872, 198}, t.encode("<|im_start|>user\n", true, true));
    }

    /** Meta's llama/test_tokenizer.py expectations, with the chat format written out as its ChatFormat does. */
    @Test
    void llama3MetaTestVectors() throws IOException {
        Path file = TestData.shared("tokenizers/llama3/test_vectors.json");
        Tokenizer t = Tokenizer.fromPath(TestData.shared("tokenizers/llama3/tokenizer.model"));
        JsonNode root = new ObjectMapper().readTree(file.toFile());
        int checked = 0;
        for (JsonNode c : root.get("cases")) {
            int[] expected = new ObjectMapper().convertValue(c.get("ids"), int[].class);
            List<Integer> ids = new ArrayList<>();
            if (c.has("text")) {
                assertTrue(c.get("bos").asBoolean() && c.get("eos").asBoolean(), "vector uses bos+eos");
                for (int id : t.encode(c.get("text").asText(), false, false)) ids.add(id);
                ids.addFirst(t.bosId());
                ids.add(t.eosId());
            } else if (c.has("chat_message")) {
                message(t, c.get("chat_message"), ids);
            } else {
                ids.add(t.bosId());
                for (JsonNode m : c.get("chat_dialog")) message(t, m, ids);
                header(t, "assistant", ids);
            }
            assertArrayEquals(expected, ids.stream().mapToInt(Integer::intValue).toArray(), c.toString());
            checked++;
        }
        assertEquals(3, checked);
        assertArrayEquals(new int[]{128000, 2028, 374, 264, 1296, 11914, 13}, t.encode("This is a test sentence.", true, false));
        assertTrue(t.addsBos());
        assertTrue(t.isEndOfGeneration(128009));
        assertTrue(t.isEndOfGeneration(128001));
        assertEquals("<|reserved_special_token_250|>", t.piece(128255));
    }

    private static void header(Tokenizer t, String role, List<Integer> ids) {
        for (int id : t.encode("<|start_header_id|>" + role + "<|end_header_id|>\n\n", false, true)) ids.add(id);
    }

    private static void message(Tokenizer t, JsonNode m, List<Integer> ids) {
        header(t, m.get("role").asText(), ids);
        for (int id : t.encode(m.get("content").asText().strip(), false, false)) ids.add(id);
        for (int id : t.encode("<|eot_id|>", false, true)) ids.add(id);
    }
}
