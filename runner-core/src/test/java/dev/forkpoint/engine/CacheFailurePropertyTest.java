package dev.forkpoint.engine;

import dev.forkpoint.TestData;
import dev.forkpoint.kvcache.CacheStats;
import dev.forkpoint.sampling.SamplingOptions;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.constraints.Size;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random request sequences on stories260K, over prompts that share prefixes, with faults injected at random
 * attention calls (before or after the layer's K/V writes), on a pool small enough to evict all the time: every
 * request that succeeds produces what the same request produces without any reuse (a salt of its own), a failed
 * request fails with the injected error, the pool never exceeds its budget, and in the end no page or lock is left.
 */
class CacheFailurePropertyTest {
    static final List<String> PREFIXES = List.of("Once upon a time", "Once upon a time, there was", "Once upon a time, there was a girl",
            "Lily and Tom", "Lily and Tom went to the park", "The sun was");
    static final List<String> SUFFIXES = List.of("", " named Lily", " who liked to play", ". She was happy", " and a big dog", ", and");

    record Step(String prompt, int numPredict, int numBatch, int faultAt, boolean afterWrites) {}

    @Provide
    Arbitrary<Step> steps() {
        return Combinators.combine(Arbitraries.of(PREFIXES), Arbitraries.of(SUFFIXES), Arbitraries.integers().between(1, 12),
                Arbitraries.of(1, 3, 8, 512), Arbitraries.integers().between(-60, 60), Arbitraries.of(false, true))
                .as((p, s, n, b, f, a) -> new Step(p + s, n, b, Math.max(0, f), a));
    }

    @Property(tries = 20)
    void requestsWithRandomFaultsBehaveLikeRunsWithoutReuse(@ForAll @Size(min = 3, max = 10) List<@net.jqwik.api.From("steps") Step> plan)
            throws Exception {
        // 10 pages of 16 positions: a few requests' worth, so that the cache evicts as it goes
        long pageBytes = 5L * 2 * 16 * 32 * Float.BYTES;
        try (LoadedModel model = LoadedModel.load(TestData.shared("models/stories260K.gguf"), 2, LoadProgress.NONE,
                EngineOptions.defaults().withKvCacheBytes(10 * pageBytes))) {
            FaultyOps[] faults = new FaultyOps[1];
            model.decorateOps(ops -> faults[0] = new FaultyOps(ops));
            int uncached = 0, failed = 0, reused = 0;
            for (Step step : plan) {
                var request = new GenerationRequest(step.prompt(), SamplingOptions.greedy().withNumPredict(step.numPredict()), 0, step.numBatch());
                GenerationResult got = null;
                if (step.faultAt() > 0) faults[0].armAt(step.faultAt(), step.afterWrites());
                try {
                    got = model.generate(request, piece -> {});
                } catch (FaultyOps.InjectedFault e) {
                    assertTrue(e.getMessage().startsWith("injected fault: attention call " + step.faultAt() + " "), e.getMessage());
                    failed++;
                } finally {
                    faults[0].disarm();
                }
                CacheStats stats = model.cacheStats();
                assertTrue(stats.usedBytes() <= stats.budgetBytes() && model.kvAllocatedBytes() <= stats.budgetBytes(), stats.toString());
                if (got == null) got = model.generate(request, piece -> {});
                GenerationResult reference = model.generate(request.withCacheSalt("uncached " + uncached++), piece -> {});
                assertEquals(0, reference.cachedTokens());
                assertEquals(got.promptTokens(), got.cachedTokens() + got.evaluatedPromptTokens());
                assertArrayEquals(reference.generatedIds(), got.generatedIds(), step.toString());
                if (got.cachedTokens() > 0) reused++;
            }
            Statistics.label("requests failed by a fault").collect(failed > 0);
            Statistics.label("requests reusing a cached prefix").collect(reused > 0);
            Statistics.label("cached nodes evicted").collect(model.cacheStats().evictedNodes() > 0);
            model.cache().evictAll();
            assertEquals(0, model.cacheStats().usedPages(), "no page or lock leaked");
        }
    }
}
