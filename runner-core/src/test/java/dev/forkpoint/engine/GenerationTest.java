package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.TestData;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The generation loop's contract on stories260K: options honoured, limits refused with both numbers. */
class GenerationTest {
    static LoadedModel model;
    static final String PROMPT = "Once upon a time";

    @BeforeAll
    static void load() throws Exception {
        model = LoadedModel.load(TestData.shared("models/stories260K.gguf"), 2, LoadProgress.NONE);
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    static GenerationResult run(GenerationRequest request, StringBuilder streamed) {
        return model.generate(request, streamed::append);
    }

    @Test
    void numBatchDoesNotChangeGreedyOutput() {
        GenerationResult reference = run(new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(40), 0, 512)
                .withCacheSalt("num_batch 512"), new StringBuilder());
        for (int batch : new int[] {1, 2, 7}) {
            // a salt of its own per num_batch, so that the whole prompt is evaluated in chunks of that size
            GenerationResult r = run(new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(40), 0, batch)
                    .withCacheSalt("num_batch " + batch), new StringBuilder());
            assertEquals(r.promptTokens(), r.evaluatedPromptTokens());
            assertArrayEquals(reference.generatedIds(), r.generatedIds(), "num_batch " + batch);
        }
    }

    @Test
    void streamedTextEqualsTheResultAndNumPredictEndsWithLength() {
        StringBuilder streamed = new StringBuilder();
        GenerationResult r = run(new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(25), 0, 512), streamed);
        assertEquals(25, r.generatedIds().length);
        assertEquals("length", r.doneReason());
        assertEquals(r.text(), streamed.toString());
        assertEquals(5, r.promptTokens());
        assertEquals(model.tokenizer().decode(r.generatedIds()), r.text());
    }

    @Test
    void stopStringEndsGenerationAndIsNeverEmitted() {
        GenerationResult full = run(new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(60), 0, 512), new StringBuilder());
        assertTrue(full.text().contains("Lily"), full.text());
        StringBuilder streamed = new StringBuilder();
        GenerationResult r = run(new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(60).withStop(List.of("Lily")), 0, 512), streamed);
        assertEquals("stop", r.doneReason());
        assertEquals(full.text().substring(0, full.text().indexOf("Lily")), streamed.toString());
        assertFalse(streamed.toString().contains("Lily"));
    }

    @Test
    void sameSeedSameOutput() {
        SamplingOptions sampled = SamplingOptions.defaults().withSeed(1234).withNumPredict(30);
        GenerationResult a = run(new GenerationRequest(PROMPT, sampled, 0, 512), new StringBuilder());
        GenerationResult b = run(new GenerationRequest(PROMPT, sampled, 0, 512), new StringBuilder());
        assertArrayEquals(a.generatedIds(), b.generatedIds());
    }

    @Test
    void contextLimitsAreRefusedWithBothNumbers() {
        var tooLong = new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(10), 5, 4);
        assertEquals("prompt is 5 tokens but num_ctx is 5; shorten the prompt or raise num_ctx",
                assertThrows(InvalidInputException.class, () -> run(tooLong, new StringBuilder())).getMessage());
        var overflow = new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(100), 64, 16);
        assertEquals("prompt (5 tokens) + num_predict (100) exceeds num_ctx 64",
                assertThrows(InvalidInputException.class, () -> run(overflow, new StringBuilder())).getMessage());
        int trained = model.config().contextLength();
        var huge = new GenerationRequest(PROMPT, SamplingOptions.greedy(), trained + 1, 512);
        assertEquals("num_ctx must be in [1, " + trained + "] (the model's context length), got " + (trained + 1),
                assertThrows(InvalidInputException.class, () -> run(huge, new StringBuilder())).getMessage());
    }

    @Test
    void aRequestCarryingItsTokensGeneratesWhatItsTextDoesAndTheContextCheckSeesThem() {
        int[] tokens = model.tokenizer().encode(PROMPT, true, true);
        SamplingOptions greedy = SamplingOptions.greedy().withNumPredict(20);
        GenerationResult fromText = run(new GenerationRequest(PROMPT, greedy, 0, 512).withCacheSalt("text"), new StringBuilder());
        GenerationResult fromTokens = run(GenerationRequest.ofTokens(PROMPT, tokens, new int[] {2}, greedy, 0, 512)
                .withCacheSalt("tokens"), new StringBuilder());
        assertArrayEquals(fromText.generatedIds(), fromTokens.generatedIds());
        assertEquals(tokens.length, fromTokens.promptTokens());
        // the tokens are what counts, not the text beside them: one token fewer, one more generated before num_ctx 10
        int[] shorter = java.util.Arrays.copyOf(tokens, tokens.length - 1);
        GenerationResult cut = run(GenerationRequest.ofTokens(PROMPT, shorter, null, SamplingOptions.greedy().withNumPredict(-1), 10, GenerationRequest.NUM_BATCH_DEFAULT),
                new StringBuilder());
        assertEquals(10 - shorter.length, cut.generatedIds().length);
        ContextOverflowException overflow = assertThrows(ContextOverflowException.class, () -> run(
                GenerationRequest.ofTokens(PROMPT, tokens, null, SamplingOptions.greedy().withNumPredict(6), 10, 4), new StringBuilder()));
        assertEquals("prompt (" + tokens.length + " tokens) + max_tokens (6) exceeds num_ctx 10", overflow.message("max_tokens"));
        assertFalse(overflow.promptAlone());
        int vocab = model.tokenizer().vocabSize();
        var outside = GenerationRequest.ofTokens(PROMPT, new int[] {1, vocab}, null, greedy, 0, 512);
        assertEquals("prompt token 1 is " + vocab + ", outside the vocabulary [0, " + vocab + ")",
                assertThrows(InvalidInputException.class, () -> run(outside, new StringBuilder())).getMessage());
    }

    @Test
    void aSinkThatThrowsEndsTheGenerationWhoseCommittedTokensAreCachedBeforeTheErrorReturns() {
        String salt = "sink throws";
        SamplingOptions greedy = SamplingOptions.greedy().withNumPredict(30);
        IllegalStateException stop = new IllegalStateException("reader gone");
        int[] pieces = {0};
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> model.generate(
                new GenerationRequest(PROMPT, greedy, 0, 512).withCacheSalt(salt), piece -> {
                    if (++pieces[0] == 3) throw stop;
                }));
        assertTrue(thrown == stop, "the sink's own exception: " + thrown);
        // the prompt and what was generated before the cancellation were inserted before generate returned
        GenerationResult again = run(new GenerationRequest(PROMPT, greedy, 0, 512).withCacheSalt(salt), new StringBuilder());
        assertEquals(again.promptTokens() - 1, again.cachedTokens(), "the whole prompt but its last token is reused");
    }

    @Test
    void numBatchOutsideOneToNumCtxIsRefusedNamingIt() {
        for (int bad : new int[] {0, -3, 65}) {
            var request = new GenerationRequest(PROMPT, SamplingOptions.greedy(), 64, bad);
            assertEquals("num_batch must be in [1, num_ctx=64], got " + bad,
                    assertThrows(InvalidInputException.class, () -> run(request, new StringBuilder())).getMessage());
        }
    }

    @Test
    void generationRunsUntilTheContextIsFullWhenNumPredictIsUnlimited() {
        GenerationResult r = run(new GenerationRequest(PROMPT, SamplingOptions.greedy().withNumPredict(-1), 32, GenerationRequest.NUM_BATCH_DEFAULT), new StringBuilder());
        assertEquals("length", r.doneReason());
        assertEquals(32, r.promptTokens() + r.generatedIds().length);
    }

    @Test
    void invalidSamplingOptionIsRefusedNamingIt() {
        var request = new GenerationRequest(PROMPT, SamplingOptions.greedy().withTopP(1.5), 0, 512);
        assertTrue(assertThrows(InvalidInputException.class, () -> run(request, new StringBuilder())).getMessage().contains("top_p"));
    }
}
