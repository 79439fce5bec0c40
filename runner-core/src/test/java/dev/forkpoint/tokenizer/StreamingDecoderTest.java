package dev.forkpoint.tokenizer;

import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Streaming output never splits a UTF-8 character, whichever tokens carry its bytes. */
class StreamingDecoderTest {

    private static Tokenizer open(String vocab) throws IOException {
        try (GgufFile file = GgufFile.open(TestData.shared("tokenizers/llamacpp/" + vocab))) {
            return Tokenizer.fromGguf(file);
        }
    }

    /** Pushes ids one by one; every piece returned must be whole characters, and all of them the full text. */
    private static String stream(Tokenizer t, int[] ids) {
        StreamingDecoder decoder = t.streamingDecoder();
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            String piece = decoder.push(id);
            assertEquals(-1, piece.indexOf('\uFFFD'), "replacement character in streamed piece \"" + piece + '"');
            out.append(piece);
        }
        return out.append(decoder.flush()).toString();
    }

    @Test
    void llamaByteFallbackEmojiAndCjk() throws IOException {
        Tokenizer t = open("ggml-vocab-llama-spm.gguf");
        String text = "this is 🦙.cpp 我想在apple工作 កាន់តែ";
        int[] ids = t.encode(text, false, false);
        // 🦙 is not in the vocabulary: its four bytes come as four <0xNN> tokens.
        int byteTokens = 0;
        for (int id : ids) if (t.piece(id).startsWith("<0x")) byteTokens++;
        assertEquals(true, byteTokens >= 4, "expected byte-fallback tokens");
        // The streamed text keeps the leading space the tokenizer added; decode() drops it.
        assertEquals(" " + text, stream(t, ids));
        assertEquals(text, t.decode(ids));
    }

    @Test
    void gpt2ByteLevelTokensSplitCharacters() throws IOException {
        Tokenizer t = open("ggml-vocab-gpt-2.gguf");
        String text = "Hello 😶‍🌫️ 工作 ½ Führer";
        int[] ids = t.encode(text, false, false);
        int partial = 0;
        for (int id : ids) {
            if (new String(t.tokenBytes(id), StandardCharsets.UTF_8).contains("\uFFFD")) partial++;
        }
        assertEquals(true, partial > 0, "expected tokens holding partial characters");
        assertEquals(text, stream(t, ids));
    }

    @Test
    void flushTurnsAnUnfinishedCharacterIntoReplacement() throws IOException {
        Tokenizer t = open("ggml-vocab-llama-spm.gguf");
        StreamingDecoder decoder = t.streamingDecoder();
        // <0xE4> <0xB8> are the first two bytes of a three-byte character.
        assertEquals("", decoder.push(byteToken(t, 0xE4)));
        assertEquals("", decoder.push(byteToken(t, 0xB8)));
        assertEquals("\uFFFD", decoder.flush());
        // A stray continuation byte can never complete: it is emitted at once.
        assertEquals("\uFFFD", decoder.push(byteToken(t, 0x80)));
        assertEquals("a", decoder.push(byteToken(t, 'a')));
    }

    private static int byteToken(Tokenizer t, int b) {
        for (int id = 0; id < t.vocabSize(); id++) if (t.piece(id).equals(String.format("<0x%02X>", b))) return id;
        throw new AssertionError("no byte token for " + b);
    }

    @Test
    void completePrefixRules() {
        byte[] euro = "€".getBytes(StandardCharsets.UTF_8); // E2 82 AC
        assertEquals(0, StreamingDecoder.completePrefix(euro, 1));
        assertEquals(0, StreamingDecoder.completePrefix(euro, 2));
        assertEquals(3, StreamingDecoder.completePrefix(euro, 3));
        byte[] mixed = {'a', (byte) 0xF0, (byte) 0x9F, (byte) 0xA6};
        assertEquals(1, StreamingDecoder.completePrefix(mixed, 4));
        byte[] invalidLead = {'a', (byte) 0xFF};
        assertEquals(2, StreamingDecoder.completePrefix(invalidLead, 2));
    }
}
