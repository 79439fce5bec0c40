package dev.forkpoint.engine;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.TestData;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.kvcache.CacheStats;
import dev.forkpoint.sampling.SamplingOptions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed generation requests on stories260K with a small prefix cache that evicts: prompt, sampling options,
 * num_ctx, num_batch, message boundaries and cache salt. Each request runs or is refused with a typed error; a refused
 * request leaves the cache exactly as it was, a finished one leaves no page held outside the cache and its counts add
 * up (evaluated + reused = prompt tokens, generated ≤ num_predict).
 */
class GenerationFuzzTest {
    static final List<String> PROMPTS = List.of("Once upon a time", "Once upon a time, there was", "Lily and Tom", "");
    private static LoadedModel model;

    static synchronized LoadedModel model() {
        if (model == null) {
            try {
                long pageBytes = 5L * 2 * 16 * 32 * Float.BYTES;
                model = LoadedModel.load(TestData.shared("models/stories260K.gguf"), 1, LoadProgress.NONE,
                        EngineOptions.defaults().withKvCacheBytes(24 * pageBytes));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return model;
    }

    /**
     * Runs {@code request} on {@code m}: null when it is refused with a typed error. A request its checks refuse
     * ({@link LoadedModel#check}: options, num_ctx, num_batch, prompt length, KV budget) must be refused by generate too
     * and leave the cache exactly as it was; one that fails while running (no usable logits from a broken model) may
     * only have cached the prompt tokens it committed; either way the pool's counts add up and no page is held
     * outside the cache afterwards.
     */
    static GenerationResult generate(LoadedModel m, GenerationRequest request) throws Exception {
        var refusedByCheck = FuzzInvariant.typedErrorOrValid(() -> m.check(request));
        CacheStats before = m.cacheStats();
        GenerationResult[] result = new GenerationResult[1];
        var refused = FuzzInvariant.typedErrorOrValid(() -> result[0] = m.generate(request, piece -> {}));
        CacheStats after = m.cacheStats();
        check(after.usedPages() + after.freePages() == after.totalPages() && after.usedBytes() <= after.budgetBytes(),
                "pool counts do not add up: " + after);
        if (refusedByCheck != null) {
            check(refused != null, "generate ran a request that check refused: " + refusedByCheck.getMessage());
            check(after.usedPages() == before.usedPages() && after.cachedTokens() == before.cachedTokens()
                    && after.nodes() == before.nodes(), "a refused request changed the cache: " + before + " → " + after);
        }
        if (refused != null) {
            check(after.cachedTokens() >= before.cachedTokens() || after.evictedNodes() > before.evictedNodes(),
                    "a failed request removed cached tokens without evicting: " + before + " → " + after);
            return null;
        }
        return result[0];
    }

    @org.junit.jupiter.api.BeforeAll
    static void load() {
        model().generate(GenerationRequest.of("Once upon a time", SamplingOptions.greedy().withNumPredict(2)), piece -> {});
    }

    @FuzzTest(maxDuration = "30s")
    void request(FuzzedDataProvider data) throws Exception {
        LoadedModel m = model();
        String prompt = data.consumeBoolean() ? data.pickValue(PROMPTS) + data.consumeString(40) : data.consumeString(120);
        int numPredict = data.consumeInt(-3, 8);
        int numCtx = data.consumeBoolean() ? 0 : data.consumeInt(-2, 600);
        if (numPredict < 0 && (numCtx == 0 || numCtx > 64)) numPredict = 8;   // bounded runs: "no limit" only in a small context
        SamplingOptions o = SamplingOptions.defaults().withTemperature(data.consumeBoolean() ? 0 : data.consumeRegularDouble(-0.5, 3))
                .withTopK(data.consumeInt(-1, 600)).withTopP(data.consumeRegularDouble(-0.2, 1.2)).withSeed(data.consumeLong())
                .withRepeatPenalty(data.consumeRegularDouble(-0.5, 3)).withRepeatLastN(data.consumeInt(-2, 70))
                .withNumPredict(numPredict);
        int numBatch = data.consumeBoolean() ? GenerationRequest.NUM_BATCH_DEFAULT : data.consumeInt(-2, 600);
        int[] boundaries = new int[data.consumeInt(0, 4)];
        for (int i = 0; i < boundaries.length; i++) boundaries[i] = data.consumeInt(-2, 80);
        String salt = data.consumeBoolean() ? "" : data.consumeString(4);
        var request = new GenerationRequest(prompt, o, numCtx, numBatch, boundaries, salt);

        GenerationResult r = generate(m, request);
        if (r == null) return;
        int promptTokens = m.tokenizer().encode(prompt, true, true).length;
        check(r.promptTokens() == promptTokens, r.promptTokens() + " prompt tokens reported, " + promptTokens + " encoded");
        check(r.evaluatedPromptTokens() + r.cachedTokens() == promptTokens, "evaluated " + r.evaluatedPromptTokens()
                + " + reused " + r.cachedTokens() + " ≠ " + promptTokens + " prompt tokens");
        if (numPredict >= 0) check(r.generatedIds().length <= numPredict, r.generatedIds().length + " tokens for num_predict " + numPredict);
        for (int id : r.generatedIds()) check(id >= 0 && id < m.tokenizer().vocabSize(), "generated id " + id + " outside the vocabulary");
    }
}
