package dev.forkpoint.reference;

import dev.forkpoint.format.gguf.GgufFile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Proves the float64 reference independently of Forkpoint's engine: on stories260K (F32) it must reproduce
 * llama2.c's greedy decode token for token and its logits after the prompt.
 */
class ReferenceTransformerTest {
    private static ReferenceTransformer reference;
    private static StoriesReference expected;

    @BeforeAll
    static void load() throws IOException {
        expected = StoriesReference.load();
        try (GgufFile file = GgufFile.open(StoriesReference.model())) {
            reference = ReferenceTransformer.load(file);
        }
    }

    @Test
    void readsStoriesHyperparameters() {
        var c = reference.config();
        assertEquals("llama", c.architecture());
        assertEquals(64, c.dim());
        assertEquals(5, c.layers());
        assertEquals(8, c.heads());
        assertEquals(4, c.kvHeads());
        assertEquals(172, c.ffn());
        assertEquals(512, c.vocab());
    }

    @Test
    void topFiveLogitsAfterPromptMatchLlama2c() {
        double[] logits = reference.lastLogits(expected.promptTokens());
        for (int i = 0; i < expected.top5Ids().length; i++) {
            assertEquals(expected.top5Logits()[i], logits[expected.top5Ids()[i]], 1e-4, "logit of token " + expected.top5Ids()[i]);
        }
        assertArrayEquals(expected.top5Ids(), ReferenceLogits.topIds(logits, 5));
    }

    @Test
    void greedyDecodeMatchesLlama2c() {
        assertArrayEquals(expected.generatedTokens(), reference.greedy(expected.promptTokens(), expected.generatedTokens().length));
    }

    @Test
    void allPositionsAgreeWithIncrementalEvaluation() {
        int[] tokens = expected.promptTokens();
        double[][] all = reference.allLogits(tokens);
        for (int n = 1; n <= tokens.length; n++) {
            double[] last = reference.lastLogits(java.util.Arrays.copyOf(tokens, n));
            assertArrayEquals(last, all[n - 1], 0.0, "position " + (n - 1));
        }
    }
}
