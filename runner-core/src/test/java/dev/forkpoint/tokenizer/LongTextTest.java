package dev.forkpoint.tokenizer;

import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Long inputs (tens of thousands of tokens) encode and round-trip; merging is per symbol pair, not per text. */
class LongTextTest {

    /** All vector inputs repeated, plus one long run without spaces (one huge word / one long SentencePiece piece). */
    private static String longText() throws IOException {
        String inputs = Files.readString(TestData.shared("tokenizers/llamacpp/ggml-vocab-gpt-2.gguf.inp"), StandardCharsets.UTF_8)
                .replace(VocabTestCases.SEPARATOR, " ");
        return inputs.repeat(20) + "abcdefghij".repeat(2000);
    }

    @Test
    void longTextsRoundTrip() throws IOException {
        String text = longText();
        for (String vocab : new String[]{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}) {
            try (GgufFile file = GgufFile.open(TestData.shared("tokenizers/llamacpp/" + vocab))) {
                Tokenizer t = Tokenizer.fromGguf(file);
                int[] ids = t.encode(text, false, false);
                assertTrue(ids.length > 10_000, vocab + ": " + ids.length + " tokens");
                assertEquals(text, t.decode(ids), vocab);
                StreamingDecoder d = t.streamingDecoder();
                StringBuilder streamed = new StringBuilder();
                for (int id : ids) streamed.append(d.push(id));
                streamed.append(d.flush());
                assertEquals(text, t.model().equals("llama") ? streamed.substring(1) : streamed.toString(), vocab);
            }
        }
    }
}
