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
import net.jqwik.api.constraints.Size;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random request sequences on the tiny Qwen3.5 (Gated DeltaNet + attention) over prompts that share prefixes and
 * diverge at random places, on a checkpoint budget of a few recurrent states and a small KV pool (both evict all
 * the time), with faults injected at random gated-delta-rule calls: the checkpoint bytes never exceed the budget,
 * every request that succeeds generates what the same request generates without any reuse (a namespace of its
 * own) — a restored state that did not belong to the matched prefix would change it —, a failed request fails with
 * the injected error, and in the end no page or lock is left.
 */
class HybridCachePropertyTest {
    static final List<String> PREFIXES = List.of("The river ran past the old mill", "The river ran past the old mill and the bridge",
            "A cat sat on the warm stones", "A cat sat on the warm stones by the river", "Under the bridge");
    static final List<String> SUFFIXES = List.of("", " at night", " while the miller slept", ". Then it rained", " and the", " quietly");

    record Step(String prompt, int numPredict, int numBatch, int faultAfter) {}

    @Provide
    Arbitrary<Step> steps() {
        return Combinators.combine(Arbitraries.of(PREFIXES), Arbitraries.of(SUFFIXES), Arbitraries.integers().between(1, 6),
                Arbitraries.of(1, 3, 8, 512), Arbitraries.integers().between(-40, 25))
                .as((p, s, n, b, f) -> new Step(p + s, n, b, Math.max(0, f)));
    }

    @Property(tries = 25)
    void requestsOnAnEvictingCheckpointBudgetBehaveLikeRunsWithoutReuse(@ForAll @Size(min = 3, max = 9) List<@net.jqwik.api.From("steps") Step> plan)
            throws Exception {
        long stateBytes = 3L * ((4 - 1) * 128 + 4 * 16 * 16) * Float.BYTES;   // the tiny model: 3 linear layers
        long budget = 7 * stateBytes;   // a request stores up to ~8 (ladder, boundaries, ends): inserts evict
        long pageBytes = 2L * 16 * 64 * Float.BYTES;                           // 1 attention layer, K and V of 2×32
        try (LoadedModel model = LoadedModel.load(TestData.shared("models/qwen35-tiny-dense"), 2, LoadProgress.NONE,
                EngineOptions.defaults().withKvCacheBytes(24 * pageBytes).withCheckpointBytes(budget))) {
            assertEquals(stateBytes, model.info().recurrentBytesPerSequence());
            FaultyOps[] faults = new FaultyOps[1];
            model.decorateOps(ops -> faults[0] = new FaultyOps(ops));
            int i = 0, resumed = 0;
            for (Step step : plan) {
                var request = new GenerationRequest(step.prompt(), SamplingOptions.greedy().withNumPredict(step.numPredict()), 0, step.numBatch());
                if (step.faultAfter() > 0) {
                    int[] calls = {0};
                    faults[0].failDeltaRuleWhen(s -> ++calls[0] == step.faultAfter());
                }
                GenerationResult got = null;
                try {
                    got = model.generate(request, piece -> {});
                } catch (FaultyOps.InjectedFault e) {
                    assertTrue(e.getMessage().startsWith("injected fault: gated delta rule"), e.getMessage());
                } finally {
                    faults[0].failDeltaRuleWhen(null);
                }
                CacheStats stats = model.cacheStats();
                assertTrue(stats.checkpointBytes() <= budget, "checkpoint bytes " + stats.checkpointBytes() + " over the budget " + budget);
                if (got != null) {
                    GenerationResult fresh = model.generate(request.withCacheSalt("fresh " + i++), piece -> {});
                    assertEquals(fresh.evaluatedPromptTokens(), fresh.promptTokens());
                    assertArrayEquals(fresh.generatedIds(), got.generatedIds(), "'" + step.prompt() + "' after reuse of "
                            + got.cachedTokens() + " tokens");
                    if (got.cachedTokens() > 0) resumed++;
                }
            }
            System.out.printf("hybrid cache property: %d requests, %d resumed from a checkpoint, %d checkpoints evicted%n",
                    plan.size(), resumed, model.cacheStats().evictedCheckpoints());
            model.cache().evictAll();
            assertEquals(0, model.cacheStats().usedPages(), "no page is left once everything is evicted");
        }
    }
}
