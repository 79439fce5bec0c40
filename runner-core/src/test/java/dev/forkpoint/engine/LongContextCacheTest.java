package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Seed scenario B at test size on a synthetic Llama with a 16k context (one token per prompt character): a long
 * prompt changed only at its end, and a multi-turn chat, evaluate only what is new (+1); num_batch does not change
 * greedy output; num_ctx, num_batch and kv_cache_bytes limits are refused naming them.
 */
class LongContextCacheTest {
    static final int CONTEXT = 16_384;
    static final int LONG = 9_000;

    @TempDir
    static Path dir;
    static Path gguf;
    static LoadedModel model;

    @BeforeAll
    static void load() throws Exception {
        gguf = SyntheticLlama.write(dir.resolve("synthetic-16k.gguf"), CONTEXT, 7);
        KvLayout layout = KvLayout.of(SyntheticLlama.LAYERS, SyntheticLlama.KV_HEADS * SyntheticLlama.HEAD_DIM, KvElementType.F32);
        model = LoadedModel.load(gguf, 2, LoadProgress.NONE, EngineOptions.defaults().withKvCacheBytes(layout.budgetFor(CONTEXT, 3)));
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    static GenerationRequest greedy(String prompt, int numPredict, int numCtx, int numBatch) {
        return new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(numPredict), numCtx, numBatch);
    }

    static GenerationResult run(GenerationRequest request) {
        return model.generate(request, piece -> {});
    }

    static int tokens(String prompt) {
        return model.tokenizer().encode(prompt, true, true).length;
    }

    @Test
    void aLongPromptChangedInItsLastCharacterEvaluatesOnlyWhatFollowsTheDivergence() {
        String prompt = SyntheticLlama.text(LONG, 1);
        char last = prompt.charAt(LONG - 1);
        String changed = prompt.substring(0, LONG - 1) + (last == 'x' ? 'y' : 'x');
        int n = tokens(prompt);
        assertTrue(n >= 9_000, "prompt of " + n + " tokens");
        assertEquals(n, tokens(changed));

        long t0 = System.nanoTime();
        GenerationResult first = run(greedy(prompt, 4, CONTEXT, GenerationRequest.NUM_BATCH_DEFAULT).withCacheSalt("scenario-b"));
        long t1 = System.nanoTime();
        GenerationResult second = run(greedy(changed, 4, CONTEXT, GenerationRequest.NUM_BATCH_DEFAULT).withCacheSalt("scenario-b"));
        long t2 = System.nanoTime();
        assertEquals(n, first.evaluatedPromptTokens());
        int afterDivergence = 1;   // only the last token differs
        assertTrue(second.evaluatedPromptTokens() <= afterDivergence + 1, "evaluated " + second.evaluatedPromptTokens());
        assertEquals(n - 1, second.cachedTokens());
        System.out.printf(Locale.ROOT, "scenario B: %d-token prompt %.0f ms fresh (evaluated %d), last character changed %.0f ms (evaluated %d, reused %d)%n",
                n, (t1 - t0) / 1e6, first.evaluatedPromptTokens(), (t2 - t1) / 1e6, second.evaluatedPromptTokens(), second.cachedTokens());
    }

    @Test
    void eachChatTurnEvaluatesOnlyItsNewTokensPlusOne() {
        String conversation = "system: you are a test. user: " + SyntheticLlama.text(600, 2) + " assistant:";
        int previousPrompt = 0, previousReply = 0;
        for (int turn = 1; turn <= 3; turn++) {
            var request = greedy(conversation, 24, 8192, GenerationRequest.NUM_BATCH_DEFAULT).withCacheSalt("chat");
            GenerationResult r = run(request);
            int n = tokens(conversation);
            if (turn == 1) {
                assertEquals(n, r.evaluatedPromptTokens());
            } else {
                int newTokens = n - previousPrompt - previousReply;
                assertTrue(r.evaluatedPromptTokens() <= newTokens + 1,
                        "turn " + turn + ": evaluated " + r.evaluatedPromptTokens() + " of " + n + ", new " + newTokens);
                assertTrue(r.cachedTokens() >= previousPrompt, "the previous prompt is reused whole");
            }
            assertEquals(24, r.generatedIds().length);
            assertTrue(r.text().chars().allMatch(c -> c >= 0x20 && c < 0x7F), "an ASCII reply re-encodes to its ids: " + r.text());
            assertEquals(r.generatedIds().length, model.tokenizer().encode(r.text(), false, false).length);
            System.out.printf(Locale.ROOT, "chat turn %d: prompt %d tokens, reused %d, evaluated %d%n", turn, n, r.cachedTokens(), r.evaluatedPromptTokens());
            previousPrompt = n;
            previousReply = r.generatedIds().length;
            conversation = conversation + r.text() + " user: " + SyntheticLlama.text(40 + turn, 10 + turn) + " assistant:";
        }
    }

    @Test
    void numBatchOneSevenFiveTwelveAndFourThousandGiveIdenticalGreedyOutput() {
        String prompt = SyntheticLlama.text(700, 3);
        int n = tokens(prompt);
        int[] reference = null;
        for (int batch : new int[] {4096, 512, 7, 1}) {
            GenerationResult r = run(greedy(prompt, 16, 8192, batch).withCacheSalt("num_batch " + batch));
            assertEquals(n, r.evaluatedPromptTokens(), "a salt of its own: nothing reused");
            if (reference == null) reference = r.generatedIds();
            else assertArrayEquals(reference, r.generatedIds(), "num_batch " + batch);
        }
        for (int bad : new int[] {0, 8193}) {
            var e = assertThrows(InvalidInputException.class, () -> run(greedy(prompt, 16, 8192, bad)));
            assertEquals("num_batch must be in [1, num_ctx=8192], got " + bad, e.getMessage());
        }
    }

    @Test
    void numCtxIsHonouredAndDefaultsToOllamasFourThousandNinetySix() {
        assertEquals(4096, model.defaultNumCtx());
        String prompt = SyntheticLlama.text(4000, 4);
        var beyondDefault = greedy(prompt, 200, 0, GenerationRequest.NUM_BATCH_DEFAULT);
        assertEquals("prompt (4001 tokens) + num_predict (200) exceeds num_ctx 4096",
                assertThrows(InvalidInputException.class, () -> run(beyondDefault)).getMessage());
        var beyondExplicit = greedy(prompt, 100, 4050, GenerationRequest.NUM_BATCH_DEFAULT);
        assertEquals("prompt (4001 tokens) + num_predict (100) exceeds num_ctx 4050",
                assertThrows(InvalidInputException.class, () -> run(beyondExplicit)).getMessage());
        var aboveTrained = greedy("hi", 1, CONTEXT + 1, GenerationRequest.NUM_BATCH_DEFAULT);
        assertEquals("num_ctx must be in [1, " + CONTEXT + "] (the model's context length), got " + (CONTEXT + 1),
                assertThrows(InvalidInputException.class, () -> run(aboveTrained)).getMessage());
    }

    @Test
    void aRequestWhoseWorstCaseKvCannotFitTheBudgetIsRefusedUpFrontNamingKvCacheBytes() throws Exception {
        try (LoadedModel small = LoadedModel.load(gguf, 1, LoadProgress.NONE)) {   // derived budget: 2 × 4096 positions
            KvLayout layout = KvLayout.of(SyntheticLlama.LAYERS, SyntheticLlama.KV_HEADS * SyntheticLlama.HEAD_DIM, KvElementType.F32);
            assertEquals(layout.budgetFor(4096, 2), small.cacheStats().budgetBytes());
            assertEquals(0, small.kvAllocatedBytes(), "the pool commits nothing before it is used");
            var unlimited = greedy("hello", -1, CONTEXT, GenerationRequest.NUM_BATCH_DEFAULT);
            var e = assertThrows(InvalidInputException.class, () -> small.generate(unlimited, piece -> {}));
            assertTrue(e.getMessage().contains("the KV budget is " + layout.budgetFor(4096, 2) + " bytes") && e.getMessage().contains("16384 KV positions"),
                    e.getMessage());
            GenerationResult fits = small.generate(greedy("hello", 8, CONTEXT, GenerationRequest.NUM_BATCH_DEFAULT), piece -> {});
            assertEquals(8, fits.generatedIds().length);
            assertTrue(small.kvAllocatedBytes() > 0 && small.kvAllocatedBytes() <= small.cacheStats().budgetBytes());
        }
        var e = assertThrows(InvalidInputException.class,
                () -> LoadedModel.load(gguf, 1, LoadProgress.NONE, EngineOptions.defaults().withKvCacheBytes(100)));
        assertTrue(e.getMessage().startsWith("kv_cache_bytes 100 is smaller than one KV page"), e.getMessage());
    }

    @Test
    void f16KvIsDeterministicAndReusedLikeF32() throws Exception {
        String prompt = SyntheticLlama.text(300, 5);
        var request = greedy(prompt, 12, 2048, GenerationRequest.NUM_BATCH_DEFAULT).withCacheSalt("f16");
        try (LoadedModel half = LoadedModel.load(gguf, 2, LoadProgress.NONE, EngineOptions.defaults().withKvType(KvElementType.F16))) {
            GenerationResult h = half.generate(request, piece -> {});
            GenerationResult again = half.generate(request, piece -> {});
            assertArrayEquals(h.generatedIds(), again.generatedIds());
            assertEquals(tokens(prompt) - 1, again.cachedTokens());
            assertEquals(12, h.generatedIds().length);
        }
    }
}
