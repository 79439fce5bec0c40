package dev.forkpoint.tokenizer;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * llama.cpp's vectors for the Qwen2 and Llama 3 vocabularies, run against GGUF vocabularies written from the
 * models' own tokenizer files.
 */
class PreTokenizerVectorsTest {

    private static void check(Tokenizer tokenizer, String vocab) throws IOException {
        for (VocabTestCases.Case c : VocabTestCases.load(vocab).cases()) {
            int[] ids = tokenizer.encode(c.text(), false, false);
            assertArrayEquals(c.ids(), ids, () -> vocab + ": \"" + c.text() + "\" gave " + Arrays.toString(ids));
            assertEquals(c.text(), tokenizer.decode(ids), () -> vocab + ": round trip of \"" + c.text() + '"');
        }
    }

    @Test
    void qwen2() throws IOException {
        check(VocabFixtures.open(VocabFixtures.qwen2File()), "ggml-vocab-qwen2.gguf");
    }

    @Test
    void llama3() throws IOException {
        check(VocabFixtures.open(VocabFixtures.llama3File()), "ggml-vocab-llama-bpe.gguf");
    }
}
