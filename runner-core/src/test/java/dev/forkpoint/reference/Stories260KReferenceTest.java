package dev.forkpoint.reference;

import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The engine on the trained stories260K model (F32) against llama2.c's reference output
 * ({@code shared/reference/stories260K_greedy_once_upon_a_time.json}): tokenisation of the prompt, the greedy
 * continuation token for token and as text, and the logits after the prompt.
 */
class Stories260KReferenceTest {
    private static StoriesReference expected;
    private static LoadedModel engine;

    @BeforeAll
    static void load() throws IOException {
        expected = StoriesReference.load();
        engine = LoadedModel.load(StoriesReference.model(), 2, LoadProgress.NONE);
    }

    @AfterAll
    static void close() {
        if (engine != null) engine.close();
    }

    @Test
    void promptTokenizesLikeLlama2c() {
        assertArrayEquals(expected.promptTokens(), engine.tokenizer().encode(expected.prompt(), true, false));
    }

    @Test
    void logitsAfterPromptMatchReference() {
        float[] logits = engine.logits(expected.promptTokens());
        assertEquals(512, logits.length, "vocabulary size");
        for (int i = 0; i < expected.top5Ids().length; i++) {
            int id = expected.top5Ids()[i];
            assertEquals(expected.top5Logits()[i], logits[id], 1e-3, "logit of token " + id);
        }
        assertArrayEquals(expected.top5Ids(), ReferenceLogits.topIds(logits, 5), "top-5 ids");
    }

    @Test
    void greedyGenerationMatchesLlama2c() {
        int n = expected.generatedTokens().length;
        var streamed = new StringBuilder();
        GenerationResult result = engine.generate(
                GenerationRequest.of(expected.prompt(), SamplingOptions.greedy().withNumPredict(n)), streamed::append);
        assertArrayEquals(expected.generatedTokens(), result.generatedIds(), "generated ids");
        assertEquals(expected.promptTokens().length, result.promptTokens(), "prompt tokens (BOS included)");
        assertEquals("length", result.doneReason());
        // The reference text is the prompt followed by the continuation.
        assertEquals(expected.text(), expected.prompt() + result.text(), "prompt + generated text");
        assertEquals(result.text(), streamed.toString(), "streamed text equals the result's text");
    }
}
