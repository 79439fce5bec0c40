package dev.forkpoint.engine;

import dev.forkpoint.TestData;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.kvcache.CacheMatch;
import dev.forkpoint.kvcache.CacheStats;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every request goes through the prefix cache (stories260K): restored KV is bit-identical to recomputed KV, reuse is
 * token-exact, and a failing step (scenario A) leaves the cache consistent and the engine serving exactly as a fresh
 * one would. Each test gets a fresh engine.
 */
class PrefixCacheTest {
    static final String PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play";
    static final int PAGE = 16;

    Path gguf;
    LoadedModel model;
    FaultyOps faults;

    @BeforeEach
    void load() throws Exception {
        gguf = TestData.shared("models/stories260K.gguf");
        model = LoadedModel.load(gguf, 2, LoadProgress.NONE);
        model.decorateOps(ops -> faults = new FaultyOps(ops));
    }

    @AfterEach
    void close() {
        if (model != null) model.close();
    }

    static GenerationRequest greedy(String prompt, int numPredict, int numBatch) {
        return new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(numPredict), 0, numBatch);
    }

    GenerationResult run(GenerationRequest request) {
        return model.generate(request, piece -> {});
    }

    /** What an engine that never served a request produces for {@code request}. */
    GenerationResult fresh(GenerationRequest request) throws Exception {
        try (LoadedModel other = LoadedModel.load(gguf, 2, LoadProgress.NONE)) {
            GenerationResult r = other.generate(request, piece -> {});
            assertEquals(0, r.cachedTokens());
            return r;
        }
    }

    int[] encode(String prompt) {
        return model.tokenizer().encode(prompt, true, true);
    }

    static int pages(long tokens) {
        return (int) ((tokens + PAGE - 1) / PAGE);
    }

    /**
     * The pages a request wrote come back bit for bit, after other requests split the tree and copied a shared page
     * on write, and they equal a recomputation from scratch (to float rounding: the same arithmetic, but the JIT may
     * compile the Vector API reductions between the two runs, which reorders float sums by an ulp; run with -Xint
     * the two agree bitwise as well).
     */
    @Test
    void kvRestoredFromTheCacheIsBitIdenticalToTheKvTheRequestWroteAndMatchesARecomputation() throws Exception {
        int[] tokens = encode(PROMPT);
        int n = tokens.length;
        int layers = model.config().layers();
        float[][][][] written = new float[n][layers][2][];
        try (SequenceKv first = model.pool().newSequence()) {
            model.prefill(tokens, model.newKvStore(first), 8);
            for (int p = 0; p < n; p++) {
                for (int l = 0; l < layers; l++) {
                    for (KvKind kind : KvKind.values()) written[p][l][kind.ordinal()] = first.read(p, l, kind);
                }
            }
            model.cache().insert(model.namespace(""), tokens, first);
        }
        // divergent requests split the cached edge inside a page and copy that page on write
        run(greedy("Once upon a time, there was a big dog", 6, 512));
        run(greedy("Once upon a time, there was a little girl named Sue", 6, 512));
        int[] twoAhead = java.util.Arrays.copyOf(tokens, n + 2);   // the match may cover all n tokens now

        CacheMatch hit = model.cache().match(model.namespace(""), twoAhead);
        try (SequenceKv restored = hit.sequence(); SequenceKv scratch = model.pool().newSequence()) {
            assertEquals(n, hit.matchedTokens());
            for (int p = 0; p < n; p++) {
                for (int l = 0; l < layers; l++) {
                    for (KvKind kind : KvKind.values()) {
                        assertArrayEquals(bits(written[p][l][kind.ordinal()]), bits(restored.read(p, l, kind)),
                                "position " + p + " layer " + l + " " + kind);
                    }
                }
            }
            model.prefill(tokens, model.newKvStore(scratch), 8);
            for (int p = 0; p < n; p++) {
                for (int l = 0; l < layers; l++) {
                    for (KvKind kind : KvKind.values()) {
                        float[] a = scratch.read(p, l, kind), b = restored.read(p, l, kind);
                        for (int i = 0; i < a.length; i++) assertEquals(a[i], b[i], 1e-5f * Math.max(1, Math.abs(a[i])), "position " + p);
                    }
                }
            }
        }
        var request = greedy(PROMPT, 30, 512);
        GenerationResult cached = run(request);
        assertEquals(n - 1, cached.cachedTokens());
        assertArrayEquals(fresh(request).generatedIds(), cached.generatedIds());
    }

    static int[] bits(float[] v) {
        int[] out = new int[v.length];
        for (int i = 0; i < v.length; i++) out[i] = Float.floatToRawIntBits(v[i]);
        return out;
    }

    @Test
    void anIdenticalPromptReusesAllButItsLastTokenAndGeneratesWhatAFreshEngineDoes() throws Exception {
        var request = greedy(PROMPT, 30, 512);
        GenerationResult first = run(request);
        GenerationResult again = run(request);
        int n = encode(PROMPT).length;
        assertEquals(n - 1, again.cachedTokens());
        assertEquals(1, again.evaluatedPromptTokens());
        assertArrayEquals(first.generatedIds(), again.generatedIds());
        assertArrayEquals(fresh(request).generatedIds(), again.generatedIds());
    }

    @Test
    void aDivergentPromptReusesExactlyTheSharedTokens() throws Exception {
        String other = "Once upon a time, there was a little boy named Tom. He loved to run";
        int[] a = encode(PROMPT), b = encode(other);
        int common = 0;
        while (common < Math.min(a.length, b.length) && a[common] == b[common]) common++;
        assertTrue(common > 5 && common < b.length - 1, "the prompts share a proper prefix");
        run(greedy(PROMPT, 10, 512));
        var request = greedy(other, 20, 512);
        GenerationResult r = run(request);
        assertEquals(common, r.cachedTokens());
        assertEquals(b.length - common, r.evaluatedPromptTokens());
        assertArrayEquals(fresh(request).generatedIds(), r.generatedIds());
        // the continuation the first request generated is cached too: prompt + reply as the next prompt reuses it
    }

    @Test
    void cacheSaltsKeepTenantsApart() {
        run(greedy(PROMPT, 5, 512));
        GenerationResult salted = run(greedy(PROMPT, 5, 512).withCacheSalt("tenant-a"));
        assertEquals(0, salted.cachedTokens());
        GenerationResult again = run(greedy(PROMPT, 5, 512).withCacheSalt("tenant-a"));
        assertEquals(encode(PROMPT).length - 1, again.cachedTokens());
    }

    @Test
    void scenarioAFaultAtDecodeStepKFailsWithTheOriginalErrorAndTheNextRequestEqualsAFreshRun() throws Exception {
        int layers = model.config().layers();
        int n = encode(PROMPT).length;
        var request = greedy(PROMPT, 20, 512);
        for (boolean afterWrites : new boolean[] {false, true}) {
            model.cache().evictAll();
            assertEquals(0, model.cacheStats().usedPages());
            // one prefill chunk (layers attention calls), then decode steps 1, 2, 3 succeed, step 4 fails at layer 2
            int k = layers + 3 * layers + 2;
            faults.armAt(k, afterWrites);
            FaultyOps.InjectedFault fault = assertThrows(FaultyOps.InjectedFault.class, () -> run(request));
            assertTrue(fault.getMessage().startsWith("injected fault: attention call " + k + " (layer 1, positions from " + (n + 3) + ")"),
                    fault.getMessage());
            assertEquals(0, fault.getSuppressed().length);

            // committed: the prompt and the first three generated tokens; the failed step left nothing behind
            CacheStats stats = model.cacheStats();
            assertEquals(n + 3, stats.cachedTokens());
            assertEquals(pages(n + 3), stats.usedPages(), "the tree alone holds pages, one chain of n + 3 tokens");
            assertTrue(stats.usedBytes() <= stats.budgetBytes());

            GenerationResult next = run(request);
            assertEquals(n - 1, next.cachedTokens());
            assertArrayEquals(fresh(request).generatedIds(), next.generatedIds(), "afterWrites " + afterWrites);
            model.cache().evictAll();
            assertEquals(0, model.cacheStats().usedPages(), "no page or lock leaked");
        }
    }

    @Test
    void aFaultDuringChunkedPrefillKeepsTheCommittedChunksAndTheEngineServing() throws Exception {
        int layers = model.config().layers();
        int n = encode(PROMPT).length;
        var request = greedy(PROMPT, 15, 4);
        faults.armAt(2 * layers + 1, true);   // the third chunk fails in its first layer
        assertThrows(FaultyOps.InjectedFault.class, () -> run(request));
        assertEquals(8, model.cacheStats().cachedTokens(), "two chunks of 4 committed");
        GenerationResult next = run(request);
        assertEquals(8, next.cachedTokens());
        assertEquals(n - 8, next.evaluatedPromptTokens());
        assertArrayEquals(fresh(request).generatedIds(), next.generatedIds());
    }

    @Test
    void aSinkThatThrowsEndsTheRequestAndItsCommittedTokensStayCached() throws Exception {
        var request = greedy(PROMPT, 30, 512);
        IllegalStateException closed = new IllegalStateException("client went away");
        int[] emitted = {0};
        assertSame(closed, assertThrows(IllegalStateException.class, () -> model.generate(request, piece -> {
            if (++emitted[0] == 5) throw closed;
        })));
        assertTrue(model.cacheStats().cachedTokens() >= encode(PROMPT).length);
        assertArrayEquals(fresh(request).generatedIds(), run(request).generatedIds());
    }

    @Test
    void logitsUseAFreshSequenceAndLeaveTheCacheAlone() {
        int[] tokens = encode(PROMPT);
        float[] a = model.logits(tokens);
        assertEquals(0, model.cacheStats().cachedTokens());
        assertEquals(0, model.cacheStats().usedPages());
        float[] b = model.logits(tokens);
        for (int i = 0; i < a.length; i++) assertEquals(a[i], b[i], 1e-5f * Math.max(1, Math.abs(a[i])), "logit " + i);
    }

    @Test
    void messageBoundariesAreCheckedAgainstThePrompt() {
        int n = encode(PROMPT).length;
        GenerationResult ok = run(greedy(PROMPT, 3, 512).withMessageBoundaries(2, n));
        assertEquals(3, ok.generatedIds().length);
        var bad = greedy(PROMPT, 3, 512).withMessageBoundaries(5, 5);
        var e = assertThrows(dev.forkpoint.InvalidInputException.class, () -> run(bad));
        assertEquals("message_boundaries must ascend within [1, " + n + "] (prompt tokens), got [5, 5]", e.getMessage());
        assertThrows(dev.forkpoint.InvalidInputException.class, () -> run(greedy(PROMPT, 3, 512).withMessageBoundaries(n + 1)));
    }

    @Test
    void kvStoreStepsAreTransactional() {
        try (SequenceKv sequence = model.pool().newSequence()) {
            KvStore kv = model.newKvStore(sequence);
            int[] tokens = encode(PROMPT);
            model.prefill(java.util.Arrays.copyOf(tokens, 5), kv, 2);
            assertEquals(5, kv.length());
            faults.armAt(1, true);
            assertThrows(FaultyOps.InjectedFault.class, () -> model.step(tokens[5], kv));
            assertEquals(5, kv.length());
            assertEquals(0, kv.pending());
        }
    }
}
