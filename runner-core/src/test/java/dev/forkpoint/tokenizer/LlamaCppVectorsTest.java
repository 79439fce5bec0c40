package dev.forkpoint.tokenizer;

import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every case of llama.cpp's test-tokenizer-0 vectors for the vocabularies shipped as GGUF files. */
class LlamaCppVectorsTest {

    private static void check(String vocab, String expectedModel) throws IOException {
        VocabTestCases cases = VocabTestCases.load(vocab);
        try (GgufFile file = GgufFile.open(TestData.shared("tokenizers/llamacpp/" + vocab))) {
            Tokenizer tokenizer = Tokenizer.fromGguf(file);
            assertEquals(expectedModel, tokenizer.model());
            assertTrue(cases.cases().size() > 40, "expected the full vector set");
            for (VocabTestCases.Case c : cases.cases()) {
                int[] ids = tokenizer.encode(c.text(), false, false);
                assertArrayEquals(c.ids(), ids, () -> vocab + ": " + quoted(c.text()) + " gave " + Arrays.toString(ids));
                // Both models are lossless for these texts: byte fallback (llama) or byte-level BPE (gpt2).
                assertEquals(c.text(), tokenizer.decode(ids), () -> vocab + ": round trip of " + quoted(c.text()));
            }
        }
    }

    private static String quoted(String s) {
        return '"' + s.replace("\n", "\\n").replace("\t", "\\t") + '"';
    }

    @Test
    void llamaSpm() throws IOException {
        check("ggml-vocab-llama-spm.gguf", "llama");
    }

    @Test
    void gpt2() throws IOException {
        check("ggml-vocab-gpt-2.gguf", "gpt2");
    }
}
