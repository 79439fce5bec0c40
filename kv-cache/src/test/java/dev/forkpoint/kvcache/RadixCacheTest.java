package dev.forkpoint.kvcache;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RadixCacheTest {
    private static final KvLayout LAYOUT = new KvLayout(2, 4, KvElementType.F16, 16);
    private static final CacheNamespace NS = CacheNamespace.of("model-a");

    private static int[] tokens(int n, int seed) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = (int) (KvOracle.mix(seed * 1000003L + i) & 0x7FFF);
        return t;
    }

    private static int[] concat(int[]... parts) {
        int[] out = new int[0];
        for (int[] p : parts) {
            int at = out.length;
            out = Arrays.copyOf(out, at + p.length);
            System.arraycopy(p, 0, out, at, p.length);
        }
        return out;
    }

    private static SequenceKv computed(PagePool pool, int[] tokens) {
        SequenceKv seq = pool.newSequence();
        seq.begin(tokens.length);
        KvOracle.writeAll(seq, tokens, 0, tokens.length);
        seq.commit();
        return seq;
    }

    @Test
    void aMatchEndingInsideAnEdgeSplitsItWithoutCopyingKv() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            int[] a = tokens(40, 1);
            try (SequenceKv seq = computed(pool, a)) {
                cache.insert(NS, a, seq);
            }
            int used = pool.usedPages();
            int[] b = concat(Arrays.copyOf(a, 20), tokens(10, 2));
            CacheMatch m = cache.match(NS, b);
            assertEquals(20, m.matchedTokens());
            assertEquals(used, pool.usedPages(), "the split copied nothing");
            assertEquals(2, cache.stats().nodes());
            int boundary = m.sequence().pageId(1);
            assertEquals(3, pool.refCount(boundary), "boundary page: upper half, lower half, matched sequence");
            CacheInvariants.check(cache, List.of(m.sequence()));
            m.sequence().close();
            CacheInvariants.check(cache, List.of());
        }
    }

    @Test
    void aFullMatchLeavesTheLastTokenToEvaluate() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            int[] a = tokens(33, 3);
            try (SequenceKv seq = computed(pool, a)) {
                cache.insert(NS, a, seq);
            }
            CacheMatch m = cache.match(NS, a);
            assertEquals(32, m.matchedTokens());
            assertEquals(1, m.tokensToEvaluate());
            assertEquals(32, m.sequence().length());
            assertNull(KvOracle.mismatch(m.sequence(), a, 32));
            m.sequence().close();
            CacheMatch one = cache.match(NS, new int[] {a[0]});
            assertEquals(0, one.matchedTokens());
            one.sequence().close();
            CacheInvariants.check(cache, List.of());
        }
    }

    @Test
    void restoredKvIsBitIdenticalToKvComputedFromScratch() {
        for (KvElementType type : KvElementType.values()) {
            KvLayout layout = new KvLayout(3, type.quantised() ? 64 : 5, type, 16);   // quantised rows are whole blocks of 32
            try (PagePool pool = new PagePool(layout, 256 * layout.pageBytes());
                 PagePool fresh = new PagePool(layout, 256 * layout.pageBytes())) {
                RadixCache cache = new RadixCache(pool, 1 << 20);
                int[] a = tokens(300, 4);
                try (SequenceKv seq = computed(pool, a)) {
                    cache.insert(NS, a, seq);
                }
                int[] b = concat(Arrays.copyOf(a, 250), tokens(30, 5));
                CacheMatch m = cache.match(NS, b);
                try (SequenceKv restored = m.sequence(); SequenceKv scratch = computed(fresh, Arrays.copyOf(b, 250))) {
                    assertEquals(250, restored.length());
                    for (int p = 0; p < 250; p++) {
                        for (int layer = 0; layer < 3; layer++) {
                            for (KvKind kind : KvKind.values()) {
                                assertNull(KvOracle.compare(restored.read(p, layer, kind), scratch.read(p, layer, kind)), type + " position " + p);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void scenarioBAttentionOnly() {
        try (PagePool pool = new PagePool(LAYOUT, 4096 * LAYOUT.pageBytes())) {
            ToyEngine engine = new ToyEngine(new RadixCache(pool, 1 << 20), false, 512);
            int[] prompt = tokens(9000, 6);
            assertEquals(9000, engine.run(NS, prompt, new int[0]).evaluated());
            int[] lastChanged = prompt.clone();
            lastChanged[8999] ^= 1;
            ToyEngine.Result r = engine.run(NS, lastChanged, new int[0]);
            assertEquals(8999, r.matched());
            assertEquals(1, r.evaluated());
            ToyEngine.Result same = engine.run(NS, prompt, new int[0]);
            assertEquals(8999, same.matched());
            assertEquals(1, same.evaluated());
        }
    }

    @Test
    void scenarioBWithRecurrentStateUsesCheckpointsAtPromptEndsAndSplits() {
        try (PagePool pool = new PagePool(LAYOUT, 4096 * LAYOUT.pageBytes())) {
            ToyEngine engine = new ToyEngine(new RadixCache(pool, 1 << 20), true, 512);
            int[] prompt = tokens(9000, 7);
            ToyEngine.Result first = engine.run(NS, prompt, new int[0]);
            assertEquals(9000, first.evaluated());
            assertEquals(KvOracle.state(prompt, 9000), first.stateAtPromptEnd());
            int[] lastChanged = prompt.clone();
            lastChanged[8999] ^= 1;
            ToyEngine.Result r = engine.run(NS, lastChanged, new int[0]);
            assertEquals(8999, r.resumedAt());
            assertEquals(1, r.evaluated());
            assertEquals(KvOracle.state(lastChanged, 9000), r.stateAtPromptEnd());
            assertEquals(1, engine.run(NS, prompt, new int[0]).evaluated());

            // a divergence in the middle: the first time it costs a recompute from the last checkpoint before it,
            // and the split point gets a checkpoint, so every later divergence there costs only its suffix
            int[] middle = prompt.clone();
            middle[5000] ^= 2;
            ToyEngine.Result m1 = engine.run(NS, middle, new int[0]);
            assertEquals(5000, m1.matched());
            assertEquals(0, m1.resumedAt());
            int[] middle2 = prompt.clone();
            middle2[5000] ^= 3;
            ToyEngine.Result m2 = engine.run(NS, middle2, new int[0]);
            assertEquals(5000, m2.resumedAt());
            assertEquals(4000, m2.evaluated());
            assertEquals(KvOracle.state(middle2, 9000), m2.stateAtPromptEnd());
        }
    }

    @Test
    void aThreeTurnChatEvaluatesOnlyEachTurnsNewTokens() {
        for (boolean stateful : new boolean[] {false, true}) {
            try (PagePool pool = new PagePool(LAYOUT, 1024 * LAYOUT.pageBytes())) {
                RadixCache cache = new RadixCache(pool, 1 << 20);
                ToyEngine engine = new ToyEngine(cache, stateful, 64);
                int[] history = tokens(300, 8);
                ToyEngine.Result turn = engine.run(NS, history, tokens(50, 9));
                assertEquals(300, turn.evaluated());
                for (int t = 2; t <= 3; t++) {
                    int[] reply = tokens(50, 9 + 10 * (t - 1));
                    int[] previousReply = tokens(50, 9 + 10 * (t - 2));
                    int[] user = tokens(40, 100 + t);
                    int[] prompt = concat(history, previousReply, user);
                    int boundary = history.length + previousReply.length;
                    ToyEngine.Result r = engine.run(NS, prompt, reply, boundary);
                    assertEquals(user.length + 1, r.evaluated(), "turn " + t + (stateful ? " (stateful)" : ""));
                    history = concat(history, previousReply, user);
                    CacheInvariants.check(cache, List.of());
                }
            }
        }
    }

    @Test
    void namespacesAreIsolated() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            int[] a = tokens(50, 10);
            try (SequenceKv seq = computed(pool, a)) {
                cache.insert(new CacheNamespace("model-a", "tenant-1"), a, seq);
            }
            for (CacheNamespace other : List.of(new CacheNamespace("model-a", "tenant-2"), CacheNamespace.of("model-a"),
                    new CacheNamespace("model-b", "tenant-1"))) {
                CacheMatch m = cache.match(other, a);
                assertEquals(0, m.matchedTokens(), other.toString());
                m.sequence().close();
            }
            CacheMatch m = cache.match(new CacheNamespace("model-a", "tenant-1"), a);
            assertEquals(49, m.matchedTokens());
            m.sequence().close();
        }
    }

    @Test
    void theLeastRecentlyUsedUnlockedLeafIsEvictedFirstAndLockedPathsSurvive() {
        try (PagePool pool = new PagePool(LAYOUT, 12 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            int[] a = tokens(64, 11), b = tokens(64, 12), c = tokens(64, 13);
            try (SequenceKv s = computed(pool, a)) { cache.insert(NS, a, s); }
            try (SequenceKv s = computed(pool, b)) { cache.insert(NS, b, s); }
            cache.match(NS, a).sequence().close(); // a is now more recent than b
            assertEquals(8, pool.usedPages());
            try (SequenceKv s = computed(pool, c)) { // needs 4 of the 4 free pages: no eviction
                cache.insert(NS, c, s);
            }
            CacheMatch lockedA = cache.match(NS, a); // a locked while running
            try (SequenceKv s = pool.newSequence()) {
                s.begin(64); // needs 4 pages: evicts b (least recent), not the locked a
                s.rollback();
            }
            CacheMatch mb = cache.match(NS, b);
            assertEquals(0, mb.matchedTokens());
            mb.sequence().close();
            cache.evictAll();
            CacheMatch again = cache.match(NS, a);
            assertEquals(63, again.matchedTokens(), "a locked path is never evicted");
            CacheInvariants.check(cache, List.of(lockedA.sequence(), again.sequence()));
            again.sequence().close();
            // everything cached is locked by lockedA or used by it: a step too large fails with the typed exception
            try (SequenceKv s = pool.newSequence()) {
                var e = assertThrows(KvBudgetExhaustedException.class, () -> s.begin(16 * 12));
                assertTrue(e.getMessage().startsWith("kv cache budget exhausted: need 12 pages"), e.getMessage());
            }
            lockedA.sequence().close();
            CacheInvariants.check(cache, List.of());
        }
    }

    @Test
    void checkpointsAreStoredAtExactOffsetsWithinTheirBudget() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 20);
            int[] a = tokens(100, 14);
            try (SequenceKv s = computed(pool, a)) {
                cache.insert(NS, a, s, List.of(new CheckpointAt(37, KvOracle.stateCheckpoint(a, 37)),
                        new CheckpointAt(81, KvOracle.stateCheckpoint(a, 81))));
            }
            assertEquals(2, cache.stats().checkpoints());
            assertEquals(16, cache.stats().checkpointBytes());
            CacheMatch m = cache.match(NS, concat(Arrays.copyOf(a, 60), tokens(5, 15)));
            assertEquals(60, m.matchedTokens());
            assertEquals(37, m.checkpoint().orElseThrow().offset());
            assertEquals(KvOracle.state(a, 37), KvOracle.stateOf(m.checkpoint().orElseThrow().checkpoint()));
            assertArrayEquals(new int[] {60, 64, 65}, m.checkpointOffsets());
            m.sequence().close();
            int[] b = tokens(30, 16);
            int nodes = cache.stats().nodes();
            try (SequenceKv s = computed(pool, b)) {
                // 8 more bytes exceed 20: the least recently used checkpoint (81; the match returned 37) is dropped, no KV
                cache.insert(NS, b, s, List.of(new CheckpointAt(30, KvOracle.stateCheckpoint(b, 30))));
            }
            assertEquals(2, cache.stats().checkpoints());
            assertEquals(1, cache.stats().evictedCheckpoints());
            assertEquals(0, cache.stats().evictedNodes());
            assertEquals(nodes + 1, cache.stats().nodes());
            CacheMatch full = cache.match(NS, a);
            assertEquals(99, full.matchedTokens(), "a's KV stays");
            assertEquals(37, full.checkpoint().orElseThrow().offset(), "81 was dropped");
            full.sequence().close();
            CacheInvariants.check(cache, List.of());
            assertThrows(IllegalArgumentException.class, () -> {
                try (SequenceKv s = computed(pool, b)) {
                    cache.insert(NS, b, s, List.of(new CheckpointAt(31, KvOracle.stateCheckpoint(b, 30))));
                }
            });
        }
    }

    private static List<Integer> checkpointOffsetsByRecency(RadixCache cache) {
        return cache.checkpointsByRecency().stream().map(RadixNode::end).toList();
    }

    @Test
    void checkpointsAreEvictedLeastRecentlyUsedFirstAndKvStays() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 24); // three 8-byte checkpoints
            int[] a = tokens(100, 30), b = tokens(50, 31), c = tokens(50, 32);
            try (SequenceKv s = computed(pool, a)) {
                cache.insert(NS, a, s, List.of(new CheckpointAt(30, KvOracle.stateCheckpoint(a, 30)),
                        new CheckpointAt(10, KvOracle.stateCheckpoint(a, 10)), new CheckpointAt(20, KvOracle.stateCheckpoint(a, 20))));
            }
            assertEquals(List.of(10, 20, 30), checkpointOffsetsByRecency(cache), "stored shallowest first");
            // a match returns (and refreshes) the deepest checkpoint on its path only: 10, not the ones it passes
            CacheMatch m = cache.match(NS, concat(Arrays.copyOf(a, 15), tokens(5, 33)));
            assertEquals(10, m.checkpoint().orElseThrow().offset());
            m.sequence().close();
            assertEquals(List.of(20, 30, 10), checkpointOffsetsByRecency(cache));
            // a sequence holding a's whole path does not protect its checkpoints
            CacheMatch lockedA = cache.match(NS, a);
            assertEquals(30, lockedA.checkpoint().orElseThrow().offset());
            assertEquals(List.of(20, 10, 30), checkpointOffsetsByRecency(cache));
            int usedPages = pool.usedPages(), nodes = cache.stats().nodes();
            try (SequenceKv s = computed(pool, b)) {
                cache.insert(NS, b, s, List.of(new CheckpointAt(50, KvOracle.stateCheckpoint(b, 50))));
            }
            assertEquals(List.of(10, 30, 50), checkpointOffsetsByRecency(cache), "20 dropped");
            try (SequenceKv s = computed(pool, c)) {
                cache.insert(NS, c, s, List.of(new CheckpointAt(40, KvOracle.stateCheckpoint(c, 40))));
            }
            assertEquals(List.of(30, 50, 40), checkpointOffsetsByRecency(cache), "10 dropped");
            CacheStats st = cache.stats();
            assertEquals(2, st.evictedCheckpoints());
            assertEquals(0, st.evictedNodes(), "no KV evicted for checkpoint room");
            assertEquals(24, st.checkpointBytes());
            assertEquals(usedPages + 8, pool.usedPages(), "b's and c's pages were added, none released");
            assertEquals(nodes + 3, st.nodes(), "b, and c split at its checkpoint; nothing removed");
            CacheInvariants.check(cache, List.of(lockedA.sequence()));
            // a's KV is still complete; its deepest checkpoint at or before 25 is gone, so a prompt diverging there starts over
            CacheMatch at25 = cache.match(NS, concat(Arrays.copyOf(a, 25), tokens(5, 34)));
            assertEquals(25, at25.matchedTokens());
            assertTrue(at25.checkpoint().isEmpty());
            assertNull(KvOracle.mismatch(at25.sequence(), a, 25));
            at25.sequence().close();
            lockedA.sequence().close();
            CacheInvariants.check(cache, List.of());
        }
    }

    @Test
    void aCheckpointBiggerThanTheBudgetIsRefusedAndDropsNothing() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 16);
            int[] a = tokens(40, 35);
            try (SequenceKv s = computed(pool, a)) {
                cache.insert(NS, a, s, List.of(new CheckpointAt(20, KvOracle.stateCheckpoint(a, 20)),
                        new CheckpointAt(30, Checkpoint.ofBytes(new byte[17])), new CheckpointAt(40, KvOracle.stateCheckpoint(a, 40))));
            }
            CacheStats st = cache.stats();
            assertEquals(List.of(20, 40), checkpointOffsetsByRecency(cache));
            assertEquals(1, st.refusedCheckpoints());
            assertEquals(0, st.evictedCheckpoints());
            assertEquals(2, st.nodes(), "split at 20, none for the refused checkpoint at 30");
            CacheInvariants.check(cache, List.of());
        }
    }

    @Test
    void anEvictedLeafTakesItsCheckpointAlong() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            int[] a = tokens(40, 36);
            try (SequenceKv s = computed(pool, a)) {
                cache.insert(NS, a, s, List.of(new CheckpointAt(20, KvOracle.stateCheckpoint(a, 20)),
                        new CheckpointAt(40, KvOracle.stateCheckpoint(a, 40))));
            }
            cache.evictAll();
            CacheStats st = cache.stats();
            assertEquals(0, st.checkpoints());
            assertEquals(0, st.checkpointBytes());
            assertEquals(2, st.evictedCheckpoints());
            assertEquals(List.of(), cache.checkpointsByRecency());
            CacheInvariants.check(cache, List.of());
        }
    }

    @Test
    void theLadderAddsRungsBeforeThePromptEndDownToItsFloor() {
        CacheMatch fresh = new CacheMatch(null, 100, 40, Optional.empty());
        assertArrayEquals(new int[] {40, 70, 84, 92, 96, 98, 99, 100}, fresh.checkpointOffsets(new int[] {70}, 80, 5));
        assertArrayEquals(new int[] {40, 70, 92, 96, 98, 99, 100}, fresh.checkpointOffsets(new int[] {70}, 90, 9), "floor 90");
        assertArrayEquals(new int[] {40, 70, 100}, fresh.checkpointOffsets(new int[] {70}, 0, 0), "no ladder");
        assertArrayEquals(new int[] {40, 70, 99, 100}, fresh.checkpointOffsets(70));
        assertArrayEquals(fresh.checkpointOffsets(70), fresh.checkpointOffsets(new int[] {70}, 0, 1), "the old overload = one rung");
        assertArrayEquals(new int[] {36, 40, 68, 84, 92, 96, 98, 99, 100}, fresh.checkpointOffsets(new int[0], 0, 7));
        int n = Integer.MAX_VALUE;
        assertEquals(32, new CacheMatch(null, n, 0, Optional.empty()).checkpointOffsets(new int[0], 0, 40).length, "31 rungs and the end, no overflow");
        CacheMatch resumed = new CacheMatch(null, 100, 99, Optional.of(new CheckpointAt(97, Checkpoint.ofBytes(new byte[1]))));
        assertArrayEquals(new int[] {98, 99, 100}, resumed.checkpointOffsets(new int[] {50}, 0, 8), "only offsets after the resume point");
        var e = assertThrows(IllegalArgumentException.class, () -> fresh.checkpointOffsets(new int[0], 0, -1));
        assertEquals("checkpoint offsets: ladder count -1 is negative", e.getMessage());
    }

    @Test
    void withTheLadderAnEditOfThePromptsLastKTokensResumesWithinKOfIt() {
        try (PagePool pool = new PagePool(LAYOUT, 4096 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            ToyEngine engine = new ToyEngine(cache, true, 512, 16, 0);
            int[] prompt = tokens(9000, 37);
            int lastMessage = 8000;
            assertEquals(9000, engine.run(NS, prompt, tokens(20, 38), lastMessage, new int[] {lastMessage}).evaluated());
            for (int k : new int[] {1, 2, 3, 5, 100, 700, 1500}) {
                int[] edited = concat(Arrays.copyOf(prompt, 9000 - k), tokens(k, 1000 + k));
                edited[9000 - k] = prompt[9000 - k] ^ 1;
                ToyEngine.Result r = engine.run(NS, edited, new int[0], lastMessage, new int[] {lastMessage});
                assertEquals(9000 - k, r.matched(), "k " + k);
                int divergence = 9000 - k;
                if (divergence >= lastMessage) {
                    // the rung 9000 − 2^ceil(log2 k), or the message boundary where that is below it
                    assertTrue(r.resumedAt() <= divergence && divergence - r.resumedAt() <= k - 1, "k " + k + ": resumed at " + r.resumedAt());
                } else {
                    assertEquals(0, r.resumedAt(), "the ladder stops at the last message: nothing before it was captured");
                }
                assertEquals(KvOracle.state(edited, 9000), r.stateAtPromptEnd());
            }
            CacheInvariants.check(cache, List.of());
        }
    }

    @Test
    void concurrentRequestsKeepTheInvariants() throws Exception {
        try (PagePool pool = new PagePool(LAYOUT, 200 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 256);
            int[] common = tokens(100, 20);
            java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
            Thread[] threads = new Thread[4];
            for (int t = 0; t < threads.length; t++) {
                int id = t;
                threads[t] = new Thread(() -> {
                    try {
                        ToyEngine engine = new ToyEngine(cache, id % 2 == 1, 16 + id);
                        for (int i = 0; i < 60; i++) {
                            int keep = (int) (KvOracle.mix(id * 1000L + i) & 127) % 100;
                            int[] prompt = concat(Arrays.copyOf(common, keep), tokens(1 + i % 50, 1000 * id + i));
                            try {
                                engine.run(i % 3 == 0 ? NS : CacheNamespace.of("model-b"), prompt, tokens(i % 7, 7 * id + i));
                            } catch (KvBudgetExhaustedException full) {
                                // every other thread's sequence is locked: a refusal, never a wrong read
                            }
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                threads[t].start();
            }
            for (Thread t : threads) t.join();
            if (failure.get() != null) throw new AssertionError(failure.get());
            CacheInvariants.check(cache, List.of());
            cache.evictAll();
            assertEquals(0, pool.usedPages());
        }
    }

    @Test
    void budgetForSizesThePoolForWholeSequences() {
        KvLayout layout = new KvLayout(2, 4, KvElementType.F16, 16);
        try (PagePool pool = new PagePool(layout, layout.budgetFor(100, 3))) {
            assertEquals(21, pool.totalPages());
            SequenceKv[] seqs = {pool.newSequence(), pool.newSequence(), pool.newSequence()};
            for (SequenceKv s : seqs) s.begin(100);
            assertEquals(0, pool.freePages());
            for (SequenceKv s : seqs) s.close();
        }
    }

    @Test
    void insertingMoreTokensThanCommittedIsABoundsError() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            int[] a = tokens(10, 17);
            try (SequenceKv s = computed(pool, Arrays.copyOf(a, 8))) {
                var e = assertThrows(KvBoundsException.class, () -> cache.insert(NS, a, s));
                assertEquals("sequence " + s.id() + ": offset 10 exceeds 8 stored positions", e.getMessage());
            }
            CacheInvariants.check(cache, List.of());
        }
    }
}
