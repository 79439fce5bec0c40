package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.TestData;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** BOS/EOS, special-token parsing, end-of-generation ids and refusals of unusable vocabularies. */
class SpecialTokensTest {
    @TempDir
    Path dir;

    private static Tokenizer shared(String vocab) throws IOException {
        try (GgufFile file = GgufFile.open(TestData.shared("tokenizers/llamacpp/" + vocab))) {
            return Tokenizer.fromGguf(file);
        }
    }

    @Test
    void llamaAddsBosAndParsesControlTokensOnRequest() throws IOException {
        Tokenizer t = shared("ggml-vocab-llama-spm.gguf");
        assertEquals(1, t.bosId());
        assertEquals(2, t.eosId());
        assertTrue(t.addsBos());
        assertFalse(t.addsEos());
        assertArrayEquals(new int[]{1, 15043, 3186}, t.encode("Hello world", true, false));
        assertEquals("Hello world", t.decode(new int[]{1, 15043, 3186}));
        // Text after a special token gets the space prefix again, as in llama.cpp.
        assertArrayEquals(new int[]{1, 15043, 2}, t.encode("<s>Hello</s>", false, true));
        int[] literal = t.encode("<s>Hello</s>", false, false);
        assertFalse(Arrays.stream(literal).anyMatch(id -> id == 1 || id == 2), Arrays.toString(literal));
        assertEquals("<s>Hello</s>", t.decode(literal));
        assertTrue(t.isEndOfGeneration(2));
        assertFalse(t.isEndOfGeneration(1));
        assertEquals(0, t.tokenBytes(1).length);
        assertArrayEquals(new byte[]{0x0A}, t.tokenBytes(13)); // <0x0A>
        assertArrayEquals(new int[0], t.encode("", false, false));
        assertArrayEquals(new int[]{1}, t.encode("", true, false));
    }

    @Test
    void gpt2AddsNoBosUnlessTheFileSays() throws IOException {
        Tokenizer t = shared("ggml-vocab-gpt-2.gguf");
        assertEquals(50256, t.bosId());
        assertFalse(t.addsBos());
        assertArrayEquals(new int[]{15496}, t.encode("Hello", true, false));
        assertArrayEquals(new int[]{15496, 50256}, t.encode("Hello<|endoftext|>", false, true));
        assertTrue(t.isEndOfGeneration(50256));
        assertEquals("Hello", t.decode(new int[]{15496, 50256}));
        assertThrows(InvalidInputException.class, () -> t.tokenBytes(50257));
        assertThrows(InvalidInputException.class, () -> t.decode(new int[]{-1}));
    }

    @Test
    void llama3TestVectorsWithChatFormatting() throws IOException {
        Tokenizer t = VocabFixtures.open(VocabFixtures.llama3File());
        assertTrue(t.addsBos(), "llama-bpe adds BOS by default");
        assertEquals(128009, t.eotId());
        assertTrue(t.isEndOfGeneration(128009));
        assertTrue(t.isEndOfGeneration(128001));
        assertTrue(t.isEndOfGeneration(128008), "<|eom_id|> ends generation");
        JsonNode vectors = new ObjectMapper().readTree(TestData.shared("tokenizers/llama3/test_vectors.json").toFile());
        for (JsonNode c : vectors.get("cases")) {
            int[] expected = toInts(c.get("ids"));
            if (c.has("text")) {
                List<Integer> ids = new ArrayList<>();
                if (c.get("bos").asBoolean()) ids.add(t.bosId());
                for (int id : t.encode(c.get("text").asText(), false, false)) ids.add(id);
                if (c.get("eos").asBoolean()) ids.add(t.eosId());
                assertArrayEquals(expected, ids.stream().mapToInt(Integer::intValue).toArray());
            } else if (c.has("chat_message")) {
                assertArrayEquals(expected, t.encode(message(c.get("chat_message")), false, true));
            } else {
                StringBuilder dialog = new StringBuilder("<|begin_of_text|>");
                for (JsonNode m : c.get("chat_dialog")) dialog.append(message(m));
                dialog.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
                assertArrayEquals(expected, t.encode(dialog.toString(), false, true));
                // The same text with addSpecial puts BOS before the parsed one.
                assertEquals(128000, t.encode(dialog.toString(), true, true)[0]);
            }
        }
    }

    private static String message(JsonNode m) {
        return "<|start_header_id|>" + m.get("role").asText() + "<|end_header_id|>\n\n" + m.get("content").asText().strip() + "<|eot_id|>";
    }

    private static int[] toInts(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
        return out;
    }

    @Test
    void userDefinedTokensAreAlwaysSplitOut() throws IOException {
        List<String> tokens = VocabFixtures.byteTokens();
        tokens.add("<think>");
        int[] types = new int[tokens.size()];
        Arrays.fill(types, VocabFixtures.NORMAL);
        types[256] = VocabFixtures.USER_DEFINED;
        Tokenizer t = VocabFixtures.open(VocabFixtures.gpt2("gpt-2", tokens, types, List.of()), dir, "user");
        assertArrayEquals(new int[]{'a', 256, 'b'}, t.encode("a<think>b", false, false));
        assertEquals("a<think>b", t.decode(new int[]{'a', 256, 'b'}));
        assertEquals(-1, t.bosId());
        assertArrayEquals(new int[]{'a'}, t.encode("a", true, false));
        assertFalse(t.isEndOfGeneration(256));
    }

    @Test
    void unknownPreTokenizerIsRefusedListingTheSupportedOnes() throws IOException {
        GgufWriter w = VocabFixtures.gpt2("made-up", VocabFixtures.byteTokens(), new int[256], List.of());
        var e = assertThrows(InvalidInputException.class, () -> VocabFixtures.open(w, dir, "pre"));
        assertTrue(e.getMessage().contains("made-up") && e.getMessage().contains("qwen2") && e.getMessage().contains("llama-bpe"), e.getMessage());
    }

    @Test
    void unknownModelAndMissingTokenizerAreRefused() throws IOException {
        GgufWriter unknown = new GgufWriter()
                .put("tokenizer.ggml.model", MetadataValue.of("t5"))
                .put("tokenizer.ggml.tokens", MetadataValue.ofStrings(List.of("a")));
        var e = assertThrows(ModelFormatException.class, () -> VocabFixtures.open(unknown, dir, "t5"));
        assertTrue(e.getMessage().contains("t5"), e.getMessage());
        GgufWriter none = new GgufWriter().put("general.architecture", MetadataValue.of("llama"));
        assertThrows(ModelFormatException.class, () -> VocabFixtures.open(none, dir, "none"));
        GgufWriter mismatched = new GgufWriter()
                .put("tokenizer.ggml.model", MetadataValue.of("llama"))
                .put("tokenizer.ggml.tokens", MetadataValue.ofStrings(List.of("a", "b")))
                .put("tokenizer.ggml.scores", MetadataValue.ofF32s(new float[]{0}));
        var m = assertThrows(ModelFormatException.class, () -> VocabFixtures.open(mismatched, dir, "mismatch"));
        assertTrue(m.getMessage().contains("scores"), m.getMessage());
    }
}
