package dev.forkpoint.kvcache;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.constraints.IntRange;

/**
 * Random sequences of requests (match + evaluate + insert), extend, failing steps (rollback), insert, fork, truncate,
 * out-of-range truncate, close and evict, against a naive model: the list of token sequences inserted per namespace
 * and, for each live sequence, its committed tokens (whose KV is the oracle's). After every step all invariants hold.
 * Then stateful chats through {@link ToyEngine} (fresh prompts, replies continued, edits of a prompt's last k tokens or
 * of its first tokens, repeats): on small checkpoint budgets and pools, checkpoints stay within budget and exact while
 * they are evicted; with the ladder and no eviction, an edit of the last k tokens resumes less than k before it.
 */
class RadixCachePropertyTest {
    private static final CacheNamespace[] NAMESPACES = {CacheNamespace.of("m"), new CacheNamespace("m", "salt")};
    private static final int MAX_LIVE = 6;
    /** Per try: [budget exhausted, requests with a partial match, stateful resumes from a checkpoint]. */
    private static final ThreadLocal<int[]> EVENTS = ThreadLocal.withInitial(() -> new int[3]);

    sealed interface Op permits Request, Extend, FailStep, Insert, Fork, Truncate, BadTruncate, Close, Evict {}
    record Request(int ns, int base, int keepPercent, int[] suffix, boolean stateful, boolean insert) implements Op {}
    record Extend(int seq, int[] tokens) implements Op {}
    record FailStep(int seq, int[] tokens, int writes) implements Op {}
    record Insert(int seq, int checkpointA, int checkpointB) implements Op {}
    record Fork(int seq) implements Op {}
    record Truncate(int seq, int percent) implements Op {}
    record BadTruncate(int seq, int beyond) implements Op {}
    record Close(int seq) implements Op {}
    record Evict(int pages) implements Op {}

    private record Live(SequenceKv seq, int[] tokens, CacheNamespace ns) {}

    @Provide
    Arbitrary<List<Op>> ops() {
        Arbitrary<int[]> toks = Arbitraries.integers().between(0, 3).array(int[].class).ofMinSize(1).ofMaxSize(14);
        Arbitrary<Integer> idx = Arbitraries.integers().between(0, 1000);
        Arbitrary<Integer> pct = Arbitraries.integers().between(0, 100);
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(6, Combinators.combine(idx, idx, pct, toks, Arbitraries.of(true, false), Arbitraries.of(true, true, false))
                        .as((ns, base, keep, suffix, stateful, insert) -> (Op) new Request(ns, base, keep, suffix, stateful, insert))),
                net.jqwik.api.Tuple.of(3, Combinators.combine(idx, toks).as((s, t) -> (Op) new Extend(s, t))),
                net.jqwik.api.Tuple.of(2, Combinators.combine(idx, toks, idx).as((s, t, w) -> (Op) new FailStep(s, t, w))),
                net.jqwik.api.Tuple.of(3, Combinators.combine(idx, idx, idx).as((s, a, b) -> (Op) new Insert(s, a, b))),
                net.jqwik.api.Tuple.of(1, idx.map(s -> (Op) new Fork(s))),
                net.jqwik.api.Tuple.of(1, Combinators.combine(idx, pct).as((s, p) -> (Op) new Truncate(s, p))),
                net.jqwik.api.Tuple.of(1, Combinators.combine(idx, Arbitraries.integers().between(1, 5)).as((s, b) -> (Op) new BadTruncate(s, b))),
                net.jqwik.api.Tuple.of(2, idx.map(s -> (Op) new Close(s))),
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 80).map(p -> (Op) new Evict(p))));
        return op.list().ofMinSize(1).ofMaxSize(50);
    }

    @Property(tries = 400)
    void randomOperationsKeepEveryInvariant(@ForAll("ops") List<Op> ops, @ForAll @IntRange(min = 4, max = 60) int pages,
                                            @ForAll @IntRange(min = 1, max = 5) int pageTokens, @ForAll boolean f16) {
        KvLayout layout = new KvLayout(2, 3, f16 ? KvElementType.F16 : KvElementType.F32, pageTokens);
        try (PagePool pool = new PagePool(layout, pages * layout.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 40);
            Map<CacheNamespace, List<int[]>> inserted = new HashMap<>();
            List<Live> live = new ArrayList<>();
            for (Op op : ops) {
                apply(op, cache, inserted, live);
                verify(cache, inserted, live);
            }
            CacheStats st = cache.stats();
            Statistics.label("evicted nodes").collect(st.evictedNodes() > 0);
            Statistics.label("checkpoints stored").collect(st.checkpoints() > 0);
            Statistics.label("budget exhausted").collect(EVENTS.get()[0] > 0);
            Statistics.label("partial match restored").collect(EVENTS.get()[1] > 0);
            Statistics.label("stateful resume from a checkpoint").collect(EVENTS.get()[2] > 0);
            EVENTS.remove();
            for (Live l : live) l.seq().close();
            live.clear();
            verify(cache, inserted, live);
            cache.evictAll();
            assertEquals(0, pool.usedPages(), "no page leaks once everything is closed and evicted");
            assertEquals(0, cache.stats().nodes());
        }
    }

    private static void apply(Op op, RadixCache cache, Map<CacheNamespace, List<int[]>> inserted, List<Live> live) {
        switch (op) {
            case Request r -> request(r, cache, inserted, live);
            case Extend e -> {
                if (live.isEmpty()) return;
                int i = e.seq() % live.size();
                Live l = live.get(i);
                int[] all = concat(l.tokens(), e.tokens());
                if (evaluate(l.seq(), all, l.tokens().length)) live.set(i, new Live(l.seq(), all, l.ns()));
            }
            case FailStep f -> {
                if (live.isEmpty()) return;
                Live l = live.get(f.seq() % live.size());
                int before = l.seq().length(), pagesBefore = l.seq().pageCount();
                try {
                    l.seq().begin(f.tokens().length);
                } catch (KvBudgetExhaustedException ex) {
                    return;
                }
                int[] all = concat(l.tokens(), f.tokens());
                int writes = f.writes() % (f.tokens().length + 1);
                KvOracle.writeAll(l.seq(), all, before, before + writes);
                l.seq().rollback(); // the step failed after `writes` positions
                assertEquals(before, l.seq().length());
                assertEquals(pagesBefore, l.seq().pageCount());
            }
            case Insert in -> {
                if (live.isEmpty()) return;
                Live l = live.get(in.seq() % live.size());
                int n = l.tokens().length;
                if (n == 0) return;
                List<CheckpointAt> cps = new ArrayList<>();
                for (int c : new int[] {1 + in.checkpointA() % n, 1 + in.checkpointB() % n}) {
                    if (cps.stream().noneMatch(x -> x.offset() == c)) cps.add(new CheckpointAt(c, KvOracle.stateCheckpoint(l.tokens(), c)));
                }
                cache.insert(l.ns(), l.tokens(), l.seq(), cps);
                inserted.computeIfAbsent(l.ns(), k -> new ArrayList<>()).add(l.tokens());
            }
            case Fork f -> {
                if (live.isEmpty() || live.size() >= MAX_LIVE) return;
                Live l = live.get(f.seq() % live.size());
                live.add(new Live(l.seq().fork(), l.tokens(), l.ns()));
            }
            case Truncate t -> {
                if (live.isEmpty()) return;
                int i = t.seq() % live.size();
                Live l = live.get(i);
                int to = l.tokens().length * t.percent() / 100;
                l.seq().truncate(to);
                live.set(i, new Live(l.seq(), Arrays.copyOf(l.tokens(), to), l.ns()));
            }
            case BadTruncate b -> {
                if (live.isEmpty()) return;
                Live l = live.get(b.seq() % live.size());
                int n = l.seq().length();
                var e = assertThrows(KvBoundsException.class, () -> l.seq().truncate(n + b.beyond()));
                assertEquals("sequence " + l.seq().id() + ": offset " + (n + b.beyond()) + " exceeds " + n + " stored positions", e.getMessage());
                assertEquals(n, l.seq().length());
            }
            case Close c -> {
                if (live.isEmpty()) return;
                live.remove(c.seq() % live.size()).seq().close();
            }
            case Evict e -> cache.ensureFreePages(e.pages());
        }
    }

    private static void request(Request r, RadixCache cache, Map<CacheNamespace, List<int[]>> inserted, List<Live> live) {
        CacheNamespace ns = NAMESPACES[r.ns() % NAMESPACES.length];
        List<int[]> known = inserted.getOrDefault(ns, List.of());
        int[] prompt = r.suffix();
        if (!known.isEmpty() && r.base() % 4 != 0) {
            int[] base = known.get(r.base() % known.size());
            prompt = concat(Arrays.copyOf(base, base.length * r.keepPercent() / 100), r.suffix());
        }
        if (live.size() >= MAX_LIVE) live.remove(0).seq().close();
        int cap = prompt.length - 1;
        int inTree = Math.min(cap, longestPrefix(treePaths(cache, ns), prompt));
        int everInserted = Math.min(cap, longestPrefix(known, prompt));
        long evictedBefore = cache.stats().evictedNodes();
        CacheMatch m = cache.match(ns, prompt);
        SequenceKv seq = m.sequence();
        assertEquals(inTree, m.matchedTokens(), "match = the longest prefix the tree holds");
        assertTrue(m.matchedTokens() <= everInserted);
        if (evictedBefore == 0) assertEquals(everInserted, m.matchedTokens(), "nothing evicted: match = longest inserted prefix");
        assertNull(KvOracle.mismatch(seq, prompt, m.matchedTokens()));
        int resume = m.matchedTokens();
        if (resume > 0) EVENTS.get()[1]++;
        if (r.stateful() && m.statefulResumeOffset() > 0) EVENTS.get()[2]++;
        if (m.checkpoint().isPresent()) {
            CheckpointAt c = m.checkpoint().get();
            assertTrue(c.offset() <= m.matchedTokens());
            assertEquals(KvOracle.state(prompt, c.offset()), KvOracle.stateOf(c.checkpoint()), "checkpoint restores this prompt's state");
        }
        if (r.stateful()) {
            resume = m.statefulResumeOffset();
            seq.truncate(resume);
        }
        int[] committed = Arrays.copyOf(prompt, resume);
        if (evaluate(seq, prompt, resume)) committed = prompt;
        live.add(new Live(seq, committed, ns));
        if (r.insert() && committed.length > 0) {
            List<CheckpointAt> cps = new ArrayList<>();
            for (int o : m.checkpointOffsets()) {
                if (o <= committed.length) cps.add(new CheckpointAt(o, KvOracle.stateCheckpoint(prompt, o)));
            }
            cache.insert(ns, committed, seq, cps);
            inserted.computeIfAbsent(ns, k -> new ArrayList<>()).add(committed);
        }
    }

    /** Writes the oracle KV of tokens[from, length) in one step; false (sequence unchanged) when the pool is full. */
    private static boolean evaluate(SequenceKv seq, int[] tokens, int from) {
        if (from == tokens.length) return true;
        try {
            seq.begin(tokens.length - from);
        } catch (KvBudgetExhaustedException e) {
            EVENTS.get()[0]++;
            assertEquals(from, seq.length());
            assertFalse(seq.inStep());
            return false;
        }
        KvOracle.writeAll(seq, tokens, from, tokens.length);
        seq.commit();
        return true;
    }

    private static void verify(RadixCache cache, Map<CacheNamespace, List<int[]>> inserted, List<Live> live) {
        CacheInvariants.check(cache, live.stream().map(Live::seq).toList());
        for (Live l : live) {
            assertEquals(l.tokens().length, l.seq().length());
            assertNull(KvOracle.mismatch(l.seq(), l.tokens(), l.tokens().length));
        }
        for (CacheNamespace ns : NAMESPACES) {
            List<int[]> known = inserted.getOrDefault(ns, List.of());
            for (int[] path : treePaths(cache, ns)) {
                assertTrue(known.stream().anyMatch(k -> k.length >= path.length && Arrays.equals(k, 0, path.length, path, 0, path.length)),
                        "the tree holds only prefixes of inserted sequences of its namespace");
            }
        }
    }

    // ---- stateful chats through ToyEngine: checkpoint eviction and the ladder ----

    /**
     * One chat request. kind 0: a fresh prompt (tail); 1: an earlier request's prompt and reply plus a new message
     * (tail); 2: an earlier prompt with its last k tokens changed (same length, the first changed one differs); 3: an
     * earlier prompt with one of its first three tokens changed; 4: an earlier prompt again.
     */
    record Turn(int kind, int base, int k, int[] tail, int replyLength) {}

    /** A request that completed (its prompt, reply and checkpoints inserted): what later turns build on. */
    private record Past(int[] prompt, int[] committed, int floor, int resumedAt) {}

    private static final int LADDER = 8;

    @Provide
    Arbitrary<List<Turn>> turns() {
        Arbitrary<int[]> toks = Arbitraries.integers().between(0, 3).array(int[].class).ofMinSize(1).ofMaxSize(30);
        Arbitrary<Integer> kind = Arbitraries.frequency(net.jqwik.api.Tuple.of(2, 0), net.jqwik.api.Tuple.of(3, 1),
                net.jqwik.api.Tuple.of(4, 2), net.jqwik.api.Tuple.of(2, 3), net.jqwik.api.Tuple.of(1, 4));
        return Combinators.combine(kind, Arbitraries.integers().between(0, 1000),
                        Arbitraries.integers().between(1, 20), toks, Arbitraries.integers().between(0, 6))
                .as(Turn::new).list().ofMinSize(2).ofMaxSize(25);
    }

    /**
     * On a small checkpoint budget (checkpoints of 8 .. 8 + padding bytes, some bigger than the whole budget) and a
     * small KV pool: after every match and insert the checkpoint bytes are within the budget and every invariant
     * holds (each stored checkpoint is the state of its path, the LRU order lists exactly the stored ones); every
     * checkpoint a match returns restores the state of exactly the matched prompt's prefix (ToyEngine checks it).
     */
    @Property(tries = 300)
    void statefulChatsOnSmallBudgetsKeepCheckpointsExactAndWithinBudget(
            @ForAll("turns") List<Turn> turns, @ForAll @IntRange(min = 8, max = 48) int budget, @ForAll @IntRange(min = 0, max = 24) int padding,
            @ForAll @IntRange(min = 8, max = 60) int pages, @ForAll @IntRange(min = 1, max = 5) int pageTokens, @ForAll @IntRange(min = 1, max = 9) int chunk) {
        KvLayout layout = new KvLayout(2, 3, KvElementType.F16, pageTokens);
        try (PagePool pool = new PagePool(layout, pages * layout.pageBytes())) {
            RadixCache cache = new RadixCache(pool, budget);
            ToyEngine engine = new ToyEngine(cache, true, chunk, LADDER, padding, seq -> {
                assertTrue(cache.stats().checkpointBytes() <= budget, "checkpoint bytes within the budget");
                CacheInvariants.check(cache, List.of(seq));
            });
            int[] exhausted = {0};
            int[] resumed = {0, 0};
            chat(cache, engine, turns, exhausted, (turn, past, r) -> {
                if (r.resumedAt() > 0) resumed[0]++;
                if (r.resumedAt() > 0 && cache.stats().evictedCheckpoints() > 0) resumed[1]++;
            });
            CacheStats st = cache.stats();
            Statistics.label("checkpoints evicted").collect(st.evictedCheckpoints() > 0);
            Statistics.label("checkpoints refused").collect(st.refusedCheckpoints() > 0);
            Statistics.label("kv nodes evicted").collect(st.evictedNodes() > 0);
            Statistics.label("kv budget exhausted").collect(exhausted[0] > 0);
            Statistics.label("resumed from a checkpoint").collect(resumed[0] > 0);
            Statistics.label("resumed from a checkpoint after checkpoint evictions").collect(resumed[1] > 0);
            cache.evictAll();
            assertEquals(0, pool.usedPages());
            assertEquals(0, cache.stats().checkpoints());
        }
    }

    /**
     * With the ladder and nothing evicted (a large budget and pool), a prompt equal to an earlier one except its last
     * k tokens resumes less than k tokens before its divergence (within the 2k + 1 the ladder promises), provided the
     * earlier request itself resumed at or before that divergence and the divergence lies in its last message.
     */
    @Property(tries = 300)
    void withTheLadderAnEditOfTheLastKTokensResumesWithinKOfTheDivergence(
            @ForAll("turns") List<Turn> turns, @ForAll @IntRange(min = 1, max = 5) int pageTokens, @ForAll @IntRange(min = 1, max = 9) int chunk) {
        KvLayout layout = new KvLayout(1, 2, KvElementType.F16, pageTokens);
        try (PagePool pool = new PagePool(layout, 4096L * layout.pageBytes())) {
            RadixCache cache = new RadixCache(pool, 1 << 30);
            ToyEngine engine = new ToyEngine(cache, true, chunk, LADDER, 0, seq -> CacheInvariants.check(cache, List.of(seq)));
            int[] checked = {0};
            chat(cache, engine, turns, new int[1], (turn, past, r) -> {
                if (turn.kind() != 2 || past == null) return;
                int divergence = r.promptTokens() - Math.min(turn.k(), past.prompt().length);
                assertTrue(r.matched() >= divergence, "nothing evicted: the match reaches the divergence");
                if (past.resumedAt() > divergence || divergence < past.floor()) return;
                int k = r.promptTokens() - divergence;
                checked[0]++;
                assertTrue(r.resumedAt() >= divergence - Math.max(k - 1, 0) && divergence - r.resumedAt() <= 2 * k + 1,
                        "k " + k + ", divergence " + divergence + ": resumed at " + r.resumedAt());
            });
            assertEquals(0, cache.stats().evictedCheckpoints() + cache.stats().evictedNodes() + cache.stats().refusedCheckpoints());
            Statistics.label("edits of the last k tokens checked").collect(checked[0] > 0);
        }
    }

    interface TurnCheck {
        void check(Turn turn, Past base, ToyEngine.Result result);
    }

    private static void chat(RadixCache cache, ToyEngine engine, List<Turn> turns, int[] exhausted, TurnCheck check) {
        CacheNamespace ns = NAMESPACES[0];
        List<Past> history = new ArrayList<>();
        for (Turn t : turns) {
            Past b = history.isEmpty() || t.kind() == 0 ? null : history.get(t.base() % history.size());
            int[] prompt;
            int floor;
            if (b == null) {
                prompt = t.tail();
                floor = t.tail().length % 2; // 0 or 1 for a raw prompt
            } else {
                int n = b.prompt().length;
                switch (t.kind()) {
                    case 1 -> {
                        prompt = concat(b.committed(), t.tail());
                        floor = b.committed().length;
                    }
                    case 2 -> {
                        int k = Math.min(t.k(), n);
                        prompt = b.prompt().clone();
                        prompt[n - k] = (prompt[n - k] + 1) % 4;
                        for (int i = n - k + 1; i < n; i++) prompt[i] = t.tail()[i % t.tail().length];
                        floor = Math.min(b.floor(), n - k);
                    }
                    case 3 -> {
                        prompt = b.prompt().clone();
                        int j = t.k() % Math.min(3, n);
                        prompt[j] = (prompt[j] + 1) % 4;
                        floor = Math.min(b.floor(), j);
                    }
                    default -> {
                        prompt = b.prompt();
                        floor = b.floor();
                    }
                }
            }
            int[] reply = new int[t.replyLength()];
            for (int i = 0; i < reply.length; i++) reply[i] = (t.tail()[i % t.tail().length] + 2) % 4;
            int[] boundaries = floor > 1 ? new int[] {floor} : new int[0];
            ToyEngine.Result r;
            try {
                r = engine.run(ns, prompt, reply, floor, boundaries);
            } catch (KvBudgetExhaustedException full) {
                exhausted[0]++; // the request failed (its sequence closed); the cache is unchanged but for its match
                CacheInvariants.check(cache, List.of());
                continue;
            }
            assertEquals(KvOracle.state(prompt, prompt.length), r.stateAtPromptEnd());
            check.check(t, b, r);
            CacheInvariants.check(cache, List.of());
            history.add(new Past(prompt, r.committed(), floor, r.resumedAt()));
        }
    }

    private static List<int[]> treePaths(RadixCache cache, CacheNamespace ns) {
        List<int[]> paths = new ArrayList<>();
        RadixNode root = cache.roots().get(ns);
        if (root == null) return paths;
        cache.forEachNode(n -> {
            if (!n.isRoot() && n.isLeaf() && rootOf(n) == root) paths.add(CacheInvariants.pathTokens(n));
        });
        return paths;
    }

    private static RadixNode rootOf(RadixNode n) {
        while (!n.isRoot()) n = n.parent;
        return n;
    }

    private static int longestPrefix(List<int[]> sequences, int[] prompt) {
        int best = 0;
        for (int[] s : sequences) {
            int i = 0;
            while (i < s.length && i < prompt.length && s[i] == prompt[i]) i++;
            best = Math.max(best, i);
        }
        return best;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
