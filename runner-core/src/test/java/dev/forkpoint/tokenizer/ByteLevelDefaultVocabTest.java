package dev.forkpoint.tokenizer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The embedded default model's vocabulary: one token per byte (no merges) plus BOS/EOS control tokens. */
class ByteLevelDefaultVocabTest {
    @TempDir
    Path dir;

    private Tokenizer tokenizer() throws IOException {
        return VocabFixtures.open(VocabFixtures.byteLevelDefault(), dir, "default");
    }

    /** With no merges, token id = byte value. */
    private static int[] bytesAsIds(String text, int... prefix) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[prefix.length + b.length];
        System.arraycopy(prefix, 0, ids, 0, prefix.length);
        for (int i = 0; i < b.length; i++) ids[prefix.length + i] = b[i] & 0xFF;
        return ids;
    }

    @Test
    void everyByteIsItsOwnToken() throws IOException {
        Tokenizer t = tokenizer();
        assertEquals("gpt2", t.model());
        assertEquals(258, t.vocabSize());
        assertEquals(256, t.bosId());
        assertEquals(257, t.eosId());
        assertTrue(t.addsBos());
        assertFalse(t.addsEos());
        for (String text : new String[]{"Once upon a time", "  two  spaces\n\ttab", "héllo wörld", "日本語 🦙 ✓", "12345 67"}) {
            assertArrayEquals(bytesAsIds(text, 256), t.encode(text, true, false), text);
            assertArrayEquals(bytesAsIds(text), t.encode(text, false, false), text);
            assertEquals(text, t.decode(t.encode(text, true, false)), text);
        }
        for (int b = 0; b < 256; b++) assertArrayEquals(new byte[]{(byte) b}, t.tokenBytes(b));
    }

    @Test
    void controlTokensParseOnlyWhenAskedAndDecodeToNothing() throws IOException {
        Tokenizer t = tokenizer();
        String text = "a<|end_of_text|>b";
        assertArrayEquals(new int[]{'a', 257, 'b'}, t.encode(text, false, true));
        assertArrayEquals(bytesAsIds(text), t.encode(text, false, false));
        assertEquals("ab", t.decode(new int[]{256, 'a', 257, 'b'}));
        assertEquals(0, t.tokenBytes(256).length);
        assertEquals("<|end_of_text|>", t.piece(257));
        assertTrue(t.isEndOfGeneration(257));
        assertFalse(t.isEndOfGeneration(256));
        assertFalse(t.isEndOfGeneration('a'));
    }

    @Test
    void streamingHoldsPartialCharactersAcrossByteTokens() throws IOException {
        Tokenizer t = tokenizer();
        String text = "a🦙日ü!";
        StreamingDecoder decoder = t.streamingDecoder();
        StringBuilder seen = new StringBuilder();
        String[] expectedAfter = {"a", "", "", "", "🦙", "", "", "日", "", "ü", "!"};
        int[] ids = t.encode(text, false, false);
        assertEquals(expectedAfter.length, ids.length);
        for (int i = 0; i < ids.length; i++) {
            String out = decoder.push(ids[i]);
            assertEquals(expectedAfter[i], out, "after token " + i);
            seen.append(out);
        }
        assertEquals("", decoder.flush());
        assertEquals(text, seen.toString());
    }
}
