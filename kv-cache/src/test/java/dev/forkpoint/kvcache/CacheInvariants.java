package dev.forkpoint.kvcache;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/** Checks every invariant stated in PagePool, SequenceKv and RadixCache against the live objects; throws on the first failure. */
final class CacheInvariants {
    private CacheInvariants() {}

    /** The tokens of the path from the root to the end of {@code node}. */
    static int[] pathTokens(RadixNode node) {
        List<RadixNode> path = new ArrayList<>();
        for (RadixNode n = node; !n.isRoot(); n = n.parent) path.add(n);
        int[] tokens = new int[node.end()];
        for (RadixNode n : path) System.arraycopy(n.tokens, 0, tokens, n.start, n.tokens.length);
        return tokens;
    }

    static void check(RadixCache cache, Collection<SequenceKv> live) {
        PagePool pool = cache.pool();
        KvLayout layout = pool.layout();
        int p = layout.pageTokens();
        Map<Integer, Integer> holders = new HashMap<>();
        IdentityHashMap<RadixNode, Integer> expectedLocks = new IdentityHashMap<>();
        int[] nodes = {0};
        long[] tokens = {0};
        long[] cpBytes = {0};
        int[] cps = {0};
        List<RadixNode> all = new ArrayList<>();
        cache.forEachNode(all::add);
        for (RadixNode n : all) {
            if (n.isRoot()) {
                require(n.tokens.length == 0 && n.pages.length == 0 && n.start == 0, "root holds tokens");
                require(n.checkpoint == null, "root holds a checkpoint");
            } else {
                nodes[0]++;
                tokens[0] += n.tokens.length;
                require(n.tokens.length >= 1, "empty edge");
                require(n.start == n.parent.end(), "node starts at " + n.start + " but its parent ends at " + n.parent.end());
                require(n.parent.child(n.tokens[0]) == n, "node not keyed by its first token");
                int want = SequenceKv.ceilDiv(n.end(), p) - n.start / p;
                require(n.pages.length == want, "node [" + n.start + "," + n.end() + ") has " + n.pages.length + " pages, want " + want);
                for (int page : n.pages) holders.merge(page, 1, Integer::sum);
                if (n.checkpoint != null) {
                    cps[0]++;
                    cpBytes[0] += n.checkpoint.byteSize();
                    int[] path = pathTokens(n);
                    require(KvOracle.stateOf(n.checkpoint) == KvOracle.state(path, n.end()), "checkpoint at " + n.end() + " is not the state of its path");
                }
                checkNodeKv(pool, n);
            }
            if (n.children != null) {
                for (var e : n.children.entrySet()) require(e.getKey() == e.getValue().tokens[0] && e.getValue().parent == n, "child key/parent");
            }
            expectedLocks.put(n, 0);
        }
        for (SequenceKv s : live) {
            require(!s.isClosed(), "live sequence closed");
            require(s.pageCount() == SequenceKv.ceilDiv(s.stored(), p), "sequence " + s.id() + " page count");
            s.forEachHeldPage(page -> holders.merge(page, 1, Integer::sum));
            if (s.lockOwner == cache) {
                for (RadixNode n = s.lockedNode; !n.isRoot(); n = n.parent) {
                    require(expectedLocks.containsKey(n), "sequence " + s.id() + " locks a node not in the tree");
                    expectedLocks.merge(n, 1, Integer::sum);
                }
            }
        }
        for (RadixNode n : all) {
            if (!n.isRoot()) require(n.lockRef == expectedLocks.get(n), "node [" + n.start + "," + n.end() + ") lockRef " + n.lockRef + ", expected " + expectedLocks.get(n));
        }
        int used = 0;
        for (int page = 0; page < pool.totalPages(); page++) {
            int want = holders.getOrDefault(page, 0);
            require(pool.refCount(page) == want, "page " + page + " refCount " + pool.refCount(page) + ", holders " + want);
            if (want > 0) used++;
        }
        require(pool.usedPages() == used, "used pages " + pool.usedPages() + ", held " + used);
        require(pool.usedBytes() <= pool.budgetBytes() && pool.capacityBytes() <= pool.budgetBytes(), "pool over budget");
        CacheStats st = cache.stats();
        require(st.nodes() == nodes[0], "stats nodes " + st.nodes() + " vs " + nodes[0]);
        require(st.cachedTokens() == tokens[0], "stats tokens");
        require(st.checkpoints() == cps[0] && st.checkpointBytes() == cpBytes[0], "stats checkpoints");
        require(st.checkpointBytes() <= st.checkpointBudgetBytes(), "checkpoints over budget");
        List<RadixNode> byRecency = cache.checkpointsByRecency();
        require(byRecency.size() == cps[0], "checkpoint LRU lists " + byRecency.size() + " nodes, the tree holds " + cps[0] + " checkpoints");
        long previous = Long.MIN_VALUE;
        for (RadixNode n : byRecency) {
            require(n.checkpoint != null && expectedLocks.containsKey(n), "checkpoint LRU lists a node without a checkpoint or not in the tree");
            require(n.checkpointAccess > previous, "checkpoint LRU not in ascending stamp order");
            previous = n.checkpointAccess;
        }
    }

    /** The node's pages hold the oracle KV of its path for positions [floor(start/P)·P, end). */
    static void checkNodeKv(PagePool pool, RadixNode n) {
        KvLayout layout = pool.layout();
        int p = layout.pageTokens();
        int[] path = pathTokens(n);
        long[] h = KvOracle.prefixHashes(path, n.end());
        int first = n.start / p;
        float[] got = new float[layout.kvDim()];
        for (int pos = first * p; pos < n.end(); pos++) {
            for (int layer = 0; layer < layout.layers(); layer++) {
                for (KvKind kind : KvKind.values()) {
                    pool.read(n.pages[pos / p - first], pos % p, layer, kind, got, 0);
                    String m = KvOracle.compare(got, KvOracle.value(layout, h[pos], layer, kind));
                    if (m != null) throw new AssertionError("cached position " + pos + " of node [" + n.start + "," + n.end() + ") layer " + layer + " " + kind + ": " + m);
                }
            }
        }
    }

    private static void require(boolean ok, String message) {
        if (!ok) throw new AssertionError(message);
    }

}
