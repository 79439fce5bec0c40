package dev.forkpoint.bench;

import org.junit.jupiter.api.Test;

import java.util.HashSet;

import static org.junit.jupiter.api.Assertions.*;

class ByteLevelVocabTest {
    @Test
    void byteTokensFollowGpt2sByteToUnicodeMap() {
        var tokens = ByteLevelVocab.forShape(ModelShape.TINY).tokens();
        assertEquals("A", tokens.get('A'));
        assertEquals("~", tokens.get('~'));
        assertEquals("\u0100", tokens.get(0));
        assertEquals("\u010A", tokens.get('\n')); // 'Ċ'
        assertEquals("\u0120", tokens.get(' '));  // 'Ġ'
        assertEquals("\u0121", tokens.get(127));
        assertEquals("\u0143", tokens.get(0xAD)); // 'Ń', the last remapped byte
        assertEquals("\u00FF", tokens.get(0xFF));
        var seen = new HashSet<String>();
        for (int b = 0; b < 256; b++) assertTrue(seen.add(tokens.get(b)), "byte " + b);
    }

    @Test
    void llama3ShapedVocabularyHasUniqueTokensAndControlTokensAtTheEnd() {
        ByteLevelVocab v = ByteLevelVocab.forShape(ModelShape.LLAMA_3_2_1B);
        assertEquals(128_256, v.tokens().size());
        assertEquals(128_256, new HashSet<>(v.tokens()).size());
        assertEquals("<|begin_of_text|>", v.tokens().get(128_000));
        assertEquals("<|end_of_text|>", v.tokens().get(128_001));
        assertEquals("<|reserved_special_token_0|>", v.tokens().get(128_002));
        assertEquals(ByteLevelVocab.NORMAL, v.tokenTypes()[127_999]);
        assertEquals(ByteLevelVocab.CONTROL, v.tokenTypes()[128_000]);
        assertEquals(ByteLevelVocab.CONTROL, v.tokenTypes()[128_255]);
        // Fillers mix letters and digits, which the Llama 3 pre-tokenizer always splits: no text yields one.
        for (int id = 256; id < 128_000; id++) assertTrue(v.tokens().get(id).matches("\u0120fp[0-9]+"), "id " + id);
    }
}
