package dev.forkpoint.kvcache;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Prints the cache's cost numbers (not a test; run with
 * {@code java -cp kv-cache/target/classes:kv-cache/target/test-classes dev.forkpoint.kvcache.KvCacheMeasurement}):
 * match + insert of a 64k-token prompt against a tree of 1,000 cached sequences, metadata bytes per cached token
 * (estimate and heap delta), and the pool's used bytes against its budget, including under eviction pressure.
 * KV contents are not written: only the cache's own work is timed.
 */
public final class KvCacheMeasurement {
    private static final CacheNamespace NS = CacheNamespace.of("bench");

    public static void main(String[] args) {
        int sequences = 1000, sequenceTokens = 4096, systemPrompts = 10, systemTokens = 1024, promptTokens = 65536;
        KvLayout layout = new KvLayout(1, 1, KvElementType.F16, KvLayout.DEFAULT_PAGE_TOKENS);
        long budget = 1_000_000L * layout.pageBytes();
        SplittableRandom rnd = new SplittableRandom(42);
        int[][] system = new int[systemPrompts][];
        for (int i = 0; i < systemPrompts; i++) system[i] = random(rnd, systemTokens);
        try (PagePool pool = new PagePool(layout, budget)) {
            RadixCache cache = new RadixCache(pool, 64 << 20);
            int[][] cached = new int[sequences][];
            for (int s = 0; s < sequences; s++) cached[s] = concat(system[s % systemPrompts], random(rnd, sequenceTokens - systemTokens));
            long heapBefore = usedHeap(); // the prompts above are the caller's, not the cache's
            for (int[] tokens : cached) {
                CacheMatch m = cache.match(NS, tokens);
                try (SequenceKv seq = m.sequence()) {
                    seq.begin(tokens.length - m.matchedTokens());
                    seq.commit();
                    cache.insert(NS, tokens, seq);
                }
            }
            CacheStats st = cache.stats();
            long heapDelta = usedHeap() - heapBefore;
            System.out.printf("tree: %d sequences of %d tokens (%d shared system prompts of %d), %d nodes, %d cached tokens%n", sequences, sequenceTokens, systemPrompts, systemTokens, st.nodes(), st.cachedTokens());
            System.out.printf("metadata: %.2f bytes/token estimated (token ids 4, page ids %.2f, nodes %.2f); heap delta %.2f bytes/token%n",
                    st.metadataBytesPerToken(), 4.0 / layout.pageTokens(),
                    (double) st.nodes() * RadixCache.NODE_OVERHEAD_BYTES / st.cachedTokens(), (double) heapDelta / st.cachedTokens());

            int rounds = 60;
            long[] match = new long[rounds], insert = new long[rounds], hitMatch = new long[rounds], hitInsert = new long[rounds];
            for (int r = 0; r < rounds; r++) {
                int[] base = cached[rnd.nextInt(sequences)];
                int shared = systemTokens + rnd.nextInt(sequenceTokens - systemTokens);
                int[] prompt = concat(Arrays.copyOf(base, shared), random(rnd, promptTokens - shared));
                long t0 = System.nanoTime();
                CacheMatch m = cache.match(NS, prompt);
                long t1 = System.nanoTime();
                SequenceKv seq = m.sequence();
                seq.begin(prompt.length - m.matchedTokens());
                seq.commit();
                long t2 = System.nanoTime();
                cache.insert(NS, prompt, seq);
                long t3 = System.nanoTime();
                seq.close();
                CacheMatch hit = cache.match(NS, prompt);
                long t4 = System.nanoTime();
                cache.insert(NS, Arrays.copyOf(prompt, hit.matchedTokens()), hit.sequence());
                long t5 = System.nanoTime();
                hit.sequence().close();
                if (m.matchedTokens() != shared || hit.matchedTokens() != promptTokens - 1) throw new AssertionError("wrong match");
                match[r] = t1 - t0;
                insert[r] = t3 - t2;
                hitMatch[r] = t4 - t3;
                hitInsert[r] = t5 - t4;
                if (pool.usedBytes() > pool.budgetBytes()) throw new AssertionError("pool over budget");
            }
            System.out.printf("(%d rounds; the tree grows by one 64k prompt per round)%n", rounds);
            System.out.printf("64k prompt, partial hit (%d–%d tokens shared): match %s, insert %s, match+insert %s%n",
                    systemTokens, sequenceTokens, stats(match), stats(insert), stats(sum(match, insert)));
            System.out.printf("64k prompt, full hit (65,535 reused): match %s, insert %s, match+insert %s%n",
                    stats(hitMatch), stats(hitInsert), stats(sum(hitMatch, hitInsert)));
            System.out.printf("pool: %d of %d pages used, %d bytes used, budget %d bytes%n",
                    pool.usedPages(), pool.totalPages(), pool.usedBytes(), pool.budgetBytes());
        }
        pressure();
    }

    /** A pool far smaller than the work: sequences keep coming, eviction keeps used bytes within the budget. */
    private static void pressure() {
        KvLayout layout = new KvLayout(4, 64, KvElementType.F16, KvLayout.DEFAULT_PAGE_TOKENS);
        long budget = 300 * layout.pageBytes() + 123;
        SplittableRandom rnd = new SplittableRandom(7);
        long maxUsed = 0;
        int exhausted = 0;
        try (PagePool pool = new PagePool(layout, budget)) {
            RadixCache cache = new RadixCache(pool, 1 << 20);
            int[] common = random(rnd, 500);
            for (int i = 0; i < 2000; i++) {
                int[] tokens = concat(Arrays.copyOf(common, rnd.nextInt(500)), random(rnd, 1 + rnd.nextInt(1500)));
                CacheMatch m = cache.match(NS, tokens);
                try (SequenceKv seq = m.sequence()) {
                    seq.begin(tokens.length - m.matchedTokens());
                    seq.commit();
                    maxUsed = Math.max(maxUsed, pool.usedBytes());
                    cache.insert(NS, tokens, seq, List.of(new CheckpointAt(tokens.length, Checkpoint.ofBytes(new byte[64]))));
                } catch (KvBudgetExhaustedException e) {
                    exhausted++;
                }
                maxUsed = Math.max(maxUsed, pool.usedBytes());
            }
            System.out.printf("pressure: 2000 requests of ≤ 2000 tokens on a %d-page pool: max used %d bytes ≤ budget %d bytes: %b; %d evicted nodes, %d requests refused (budget exhausted)%n",
                    pool.totalPages(), maxUsed, budget, maxUsed <= budget, cache.stats().evictedNodes(), exhausted);
        }
    }

    private static String stats(long[] ns) {
        long[] s = ns.clone();
        Arrays.sort(s);
        return String.format("median %.3f ms (min %.3f, p90 %.3f)", s[s.length / 2] / 1e6, s[0] / 1e6, s[s.length * 9 / 10] / 1e6);
    }

    private static long[] sum(long[] a, long[] b) {
        long[] s = new long[a.length];
        for (int i = 0; i < a.length; i++) s[i] = a[i] + b[i];
        return s;
    }

    private static long usedHeap() {
        for (int i = 0; i < 3; i++) System.gc();
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    private static int[] random(SplittableRandom rnd, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = rnd.nextInt(150_000);
        return t;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
