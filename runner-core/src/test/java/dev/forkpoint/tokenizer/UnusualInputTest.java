package dev.forkpoint.tokenizer;

import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Inputs that stress the algorithms: one enormous word, long whitespace runs, NUL, unpaired surrogates. */
class UnusualInputTest {

    private static Tokenizer open(String vocab) throws IOException {
        try (GgufFile file = GgufFile.open(TestData.shared("tokenizers/llamacpp/" + vocab))) {
            return Tokenizer.fromGguf(file);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"})
    void hugeWordsAndWhitespaceRunsRoundTrip(String vocab) throws IOException {
        Tokenizer t = open(vocab);
        for (String text : new String[]{"x".repeat(30_000), " ".repeat(20_000) + "a", "🦙".repeat(5_000),
                "\n\t ".repeat(5_000), "1".repeat(10_000), "\0a\0"}) {
            int[] ids = t.encode(text, false, false);
            assertTrue(ids.length > 0);
            assertEquals(text, t.decode(ids), () -> vocab + ": text of length " + text.length());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"})
    void unpairedSurrogatesBecomeQuestionMarksNotErrors(String vocab) throws IOException {
        Tokenizer t = open(vocab);
        // Java encodes an unpaired surrogate as '?' in UTF-8; the tokenizer follows that rather than failing.
        assertEquals("a?b", t.decode(t.encode("a\uD83Db", false, false)));
        assertEquals("?", t.decode(t.encode("\uDC00", false, false)));
    }
}
