package dev.forkpoint.reference;

import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.model.Pooling;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The engine's embedding ({@link LoadedModel#embed}) against the independent float64 reference: on stories260K
 * (F32, no pooling in its metadata, so last-token pooling) the pooled vector is the reference's final hidden state
 * (output RMSNorm applied, before the output projection) of the last token.
 *
 * <p>Bound: 1e-4 absolute per component (float32 accumulation against float64, as the logits tests allow for F32;
 * measured: {@value #MEASURED}).
 */
class EmbeddingReferenceTest {
    static final String MEASURED = "max |engine − reference| 2.1e-6 over the 64 components (\"Once upon a time\"), 2026-12-04";
    private static ReferenceTransformer reference;
    private static LoadedModel engine;

    @BeforeAll
    static void load() throws IOException {
        try (GgufFile file = GgufFile.open(StoriesReference.model())) {
            reference = ReferenceTransformer.load(file);
        }
        engine = LoadedModel.load(StoriesReference.model(), 2, LoadProgress.NONE);
    }

    @AfterAll
    static void close() {
        if (engine != null) engine.close();
    }

    private static double maxDiff(float[] actual, double[] expected) {
        assertEquals(expected.length, actual.length, "vector length");
        double max = 0;
        for (int i = 0; i < expected.length; i++) max = Math.max(max, Math.abs(actual[i] - expected[i]));
        return max;
    }

    @Test
    void storiesHasNoPoolingInItsMetadataSoTheLastTokenIsPooled() {
        assertEquals(Pooling.Kind.LAST, engine.pooling().kind());
    }

    @Test
    void lastTokenHiddenStateMatchesTheFloat64Reference() throws IOException {
        int[] tokens = StoriesReference.load().promptTokens();
        double[][] expected = reference.hiddenStates(tokens);
        float[] actual = engine.embed(tokens, 512);
        assertEquals(64, actual.length);
        double diff = maxDiff(actual, expected[tokens.length - 1]);
        System.out.println("embedding vs float64 reference: max abs diff " + diff);
        assertTrue(diff < 1e-4, "max abs diff " + diff);
    }

    @Test
    void longerInputInSmallChunksMatchesTheReference() {
        int[] tokens = engine.tokenizer().encode("Lily and Ben went to the park. They saw a big dog and a little cat. The sun was warm.", true, true);
        double[][] expected = reference.hiddenStates(tokens);
        float[] whole = engine.embed(tokens, 512);
        float[] chunked = engine.embed(tokens, 7);   // the KV of earlier chunks is attended to
        assertTrue(maxDiff(whole, expected[tokens.length - 1]) < 1e-4);
        assertTrue(maxDiff(chunked, expected[tokens.length - 1]) < 1e-4);
    }

    @Test
    void embeddingsLeaveThePrefixCacheAsItWas() {
        var before = engine.cacheStats();
        int[] tokens = engine.tokenizer().encode("Once upon a time", true, true);
        float[] a = engine.embed(tokens, 512), b = engine.embed(tokens, 512);
        assertArrayEquals(a, b, "the same tokens give the same vector");
        var after = engine.cacheStats();
        assertEquals(before.toString(), after.toString());
    }

    @Test
    void refusesNoTokensAndIdsOutsideTheVocabulary() {
        var e = org.junit.jupiter.api.Assertions.assertThrows(dev.forkpoint.InvalidInputException.class, () -> engine.embed(new int[0], 512));
        assertTrue(e.getMessage().contains("no tokens"), e.getMessage());
        e = org.junit.jupiter.api.Assertions.assertThrows(dev.forkpoint.InvalidInputException.class, () -> engine.embed(new int[] {1, 512}, 512));
        assertTrue(e.getMessage().contains("512"), e.getMessage());
    }
}
