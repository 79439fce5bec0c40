package dev.forkpoint.bench.jmh;

import dev.forkpoint.kvcache.CacheMatch;
import dev.forkpoint.kvcache.CacheNamespace;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.RadixCache;
import dev.forkpoint.kvcache.SequenceKv;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The prefix cache's own cost (no KV contents written): a 64k-token prompt against a tree of 1,000 cached
 * sequences of 4,096 tokens (10 shared 1,024-token system prompts). The prompt shares a random prefix of one cached
 * sequence: {@code match} finds it (splitting the edge), {@code insert} adds the prompt's new positions, already
 * reserved and committed by the setup (page allocation belongs to writing KV, not to the cache's bookkeeping).
 * {@code restore}: the whole prompt is cached; match (= restoring 65,535 positions' page table). Each iteration
 * rebuilds the tree, so every measured call sees the same state. Goal: match + insert under 1 ms.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 10)
@Measurement(iterations = 40)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g"})
public class PrefixCacheBench {
    private static final CacheNamespace NS = CacheNamespace.of("bench");
    private static final int SEQUENCES = 1000, SEQUENCE_TOKENS = 4096, SYSTEM_PROMPTS = 10, SYSTEM_TOKENS = 1024;
    private static final int PROMPT_TOKENS = 65536;

    private final SplittableRandom random = new SplittableRandom(42);
    private PagePool pool;
    private RadixCache cache;
    private int[] partialHit;
    private int[] fullHit;
    private SequenceKv committed;
    private int[] insertedPrompt;

    @Setup(Level.Iteration)
    public void buildTree() {
        KvLayout layout = new KvLayout(1, 1, KvElementType.F16, KvLayout.DEFAULT_PAGE_TOKENS);
        pool = new PagePool(layout, 1_000_000L * layout.pageBytes());
        cache = new RadixCache(pool, 64 << 20);
        int[][] system = new int[SYSTEM_PROMPTS][];
        for (int i = 0; i < SYSTEM_PROMPTS; i++) system[i] = tokens(SYSTEM_TOKENS);
        int[][] cached = new int[SEQUENCES][];
        for (int s = 0; s < SEQUENCES; s++) {
            cached[s] = concat(system[s % SYSTEM_PROMPTS], tokens(SEQUENCE_TOKENS - SYSTEM_TOKENS));
            matchInsert(cached[s]);
        }
        int[] base = cached[random.nextInt(SEQUENCES)];
        int shared = SYSTEM_TOKENS + random.nextInt(SEQUENCE_TOKENS - SYSTEM_TOKENS);
        partialHit = concat(Arrays.copyOf(base, shared), tokens(PROMPT_TOKENS - shared));
        fullHit = concat(Arrays.copyOf(base, shared), tokens(PROMPT_TOKENS - shared));
        matchInsert(fullHit);
        insertedPrompt = partialHit;
        CacheMatch m = cache.match(NS, insertedPrompt);
        committed = m.sequence();
        committed.begin(insertedPrompt.length - m.matchedTokens());
        committed.commit();
        partialHit = concat(Arrays.copyOf(base, shared), tokens(PROMPT_TOKENS - shared));   // a second divergent prompt for match
        System.gc();   // the rebuild's garbage must not be collected inside the single measured call
    }

    @TearDown(Level.Iteration)
    public void close() {
        committed.close();
        pool.close();
    }

    @Benchmark
    public int match() {
        CacheMatch m = cache.match(NS, partialHit);
        m.sequence().close();
        return m.matchedTokens();
    }

    @Benchmark
    public int insert() {
        cache.insert(NS, insertedPrompt, committed);
        return committed.length();
    }

    @Benchmark
    public int restore() {
        CacheMatch m = cache.match(NS, fullHit);
        m.sequence().close();
        if (m.matchedTokens() != PROMPT_TOKENS - 1) throw new AssertionError("full hit matched " + m.matchedTokens());
        return m.matchedTokens();
    }

    private int matchInsert(int[] prompt) {
        CacheMatch m = cache.match(NS, prompt);
        try (SequenceKv seq = m.sequence()) {
            seq.begin(prompt.length - m.matchedTokens());
            seq.commit();
            cache.insert(NS, prompt, seq);
        }
        return m.matchedTokens();
    }

    private int[] tokens(int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = random.nextInt(128_000);
        return t;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
