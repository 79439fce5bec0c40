package dev.forkpoint.kvcache;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A token-exact prefix cache: one radix tree over token ids per {@link CacheNamespace}, whose edges reference
 * {@link PagePool} pages, plus checkpoints of non-truncatable state at exact node offsets.
 *
 * <h2>Invariants</h2>
 * <ol>
 * <li>Levels: a child starts where its parent ends; its key in the parent is its first token; siblings differ in
 *     their first token; every non-root edge has ≥ 1 token.</li>
 * <li>Pages: a node [start, end) holds {@code ceil(end/P) − floor(start/P)} pages, each retained once by the node;
 *     they hold the KV of the path's tokens for positions [floor(start/P)·P, end). When start is not a page boundary the
 *     first page may be the parent's last page (after a split) or a copy of it (after copy-on-write).</li>
 * <li>Locks: a node's lockRef is the number of live sequences whose locked node is it or a descendant. Locked nodes
 *     are never evicted, but their checkpoints may be dropped (invariant 6).</li>
 * <li>KV eviction removes unlocked leaves, least recently used first (a logical clock stamped on every node a match
 *     or insert passes), until enough pool pages are free, and only for that: never to make room for checkpoints. A
 *     node's checkpoint goes with it.</li>
 * <li>Checkpoints: at most one per node (never the root), describing the state after exactly {@code end()} tokens of
 *     its path; their bytes sum to {@link CacheStats#checkpointBytes()} ≤ the checkpoint budget, at all times.</li>
 * <li>Checkpoint eviction is least recently used over checkpoints, separately from KV: each checkpoint has its own
 *     stamp from the same clock, set when it is stored (or offered again where it exists) and when a match returns it
 *     (the deepest checkpoint on the matched path; the shallower ones it passes are not stamped). A checkpoint that
 *     does not fit drops the least recently used ones, on any node, locked or not, until it fits; its node and KV stay.
 *     Dropping one whose path a sequence holds is safe: a checkpoint is immutable and the engine copies it on
 *     restore, so a sequence never depends on the cache still holding it. One bigger than the whole budget is refused
 *     (and drops nothing). {@code checkpointLru} lists exactly the nodes with a checkpoint, oldest stamp first.</li>
 * <li>Nothing is copied on a split: both halves reference the boundary page.</li>
 * </ol>
 * Metadata per cached token: 4 bytes of token id in the edge's int[], 4 bytes per P tokens of page id, and one node
 * per edge; no per-token objects. All public methods are thread-safe (one lock per cache).
 */
public final class RadixCache {
    /** Estimated heap bytes per node besides its two arrays' elements: object, array headers, map entry in parent. */
    static final int NODE_OVERHEAD_BYTES = 200;

    private final PagePool pool;
    private final int pageTokens;
    private final long checkpointBudgetBytes;
    private final Map<CacheNamespace, RadixNode> roots = new HashMap<>();
    private long clock;
    private int nodes;
    private long cachedTokens;
    private long pageRefs;
    private int checkpoints;
    private long checkpointBytes;
    private long evictedNodes;
    private long evictedCheckpoints;
    private long refusedCheckpoints;
    /** The nodes holding a checkpoint, least recently used checkpoint first (ascending checkpointAccess). */
    private final LinkedHashSet<RadixNode> checkpointLru = new LinkedHashSet<>();

    /** A cache over {@code pool} (which then evicts through it when full), with a budget for checkpoint bytes. */
    public RadixCache(PagePool pool, long checkpointBudgetBytes) {
        if (pool == null) throw new IllegalArgumentException("radix cache: pool is missing");
        if (checkpointBudgetBytes < 0) throw new IllegalArgumentException("checkpoint budget " + checkpointBudgetBytes);
        this.pool = pool;
        this.pageTokens = pool.layout().pageTokens();
        this.checkpointBudgetBytes = checkpointBudgetBytes;
        pool.setReclaimer(this::ensureFreePages);
    }

    public PagePool pool() {
        return pool;
    }

    /**
     * The longest cached prefix of {@code tokens} in {@code namespace}, at most {@code tokens.length − 1} tokens, as a
     * new locked sequence, with the deepest checkpoint on the matched path (whose recency it refreshes). A match ending
     * inside an edge splits it (no KV is copied).
     */
    public synchronized CacheMatch match(CacheNamespace namespace, int[] tokens) {
        requireTokens(tokens);
        long now = ++clock;
        RadixNode root = root(namespace);
        root.lastAccess = now;
        int limit = tokens.length - 1;
        int[] table = new int[SequenceKv.ceilDiv(limit, pageTokens)];
        RadixNode node = root;
        RadixNode deepestCheckpoint = null;
        int d = 0;
        while (d < limit) {
            RadixNode child = node.child(tokens[d]);
            if (child == null) break;
            int common = commonPrefix(child.tokens, tokens, d, limit);
            if (common < child.tokens.length) child = split(child, d + common);
            int first = child.start / pageTokens;
            System.arraycopy(child.pages, 0, table, first, child.pages.length);
            child.lastAccess = now;
            if (child.checkpoint != null) deepestCheckpoint = child;
            node = child;
            d = child.end();
        }
        int[] pages = Arrays.copyOf(table, SequenceKv.ceilDiv(d, pageTokens));
        pool.retain(pages, 0, pages.length);
        SequenceKv sequence = new SequenceKv(pool, pool.nextSequenceId(), pages, d);
        lockPath(node, 1);
        sequence.lockedNode = node;
        sequence.lockOwner = this;
        Optional<CheckpointAt> checkpoint = Optional.empty();
        if (deepestCheckpoint != null) {
            touchCheckpoint(deepestCheckpoint);
            checkpoint = Optional.of(new CheckpointAt(deepestCheckpoint.end(), deepestCheckpoint.checkpoint));
        }
        return new CacheMatch(sequence, tokens.length, d, checkpoint);
    }

    /** {@link #insert(CacheNamespace, int[], SequenceKv, List)} without checkpoints. */
    public void insert(CacheNamespace namespace, int[] tokens, SequenceKv sequence) {
        insert(namespace, tokens, sequence, List.of());
    }

    /**
     * Caches {@code tokens} (the first tokens.length committed positions of {@code sequence}), adopting the sequence's
     * pages for the part not cached yet, and stores the given checkpoints at their exact offsets, shallowest first
     * (splitting edges there). A checkpoint that does not fit the budget drops the least recently used checkpoints
     * until it fits (no KV is evicted for it); one bigger than the whole budget is refused, and one where a checkpoint
     * exists already only refreshes that one's recency. The sequence's lock moves to the node ending at tokens.length
     * and is held until it is closed.
     */
    public synchronized void insert(CacheNamespace namespace, int[] tokens, SequenceKv sequence,
                                    List<CheckpointAt> checkpointsToStore) {
        requireTokens(tokens);
        if (sequence == null || sequence.pool() != pool) throw new IllegalArgumentException("insert: sequence is not on this cache's pool");
        if (sequence.isClosed()) throw new IllegalStateException("insert: sequence " + sequence.id() + " is closed");
        if (sequence.inStep()) throw new IllegalStateException("insert: sequence " + sequence.id() + " has an open step");
        if (tokens.length > sequence.length()) throw KvBoundsException.exceeds(sequence.id(), tokens.length, sequence.length());
        if (sequence.lockOwner != null && sequence.lockOwner != this) throw new IllegalArgumentException("insert: sequence locked by another cache");
        for (CheckpointAt c : checkpointsToStore) {
            if (c.offset() > tokens.length) {
                throw new IllegalArgumentException("insert: checkpoint at offset " + c.offset() + " beyond the " + tokens.length + " inserted tokens");
            }
            if (c.checkpoint().byteSize() < 0) {
                throw new IllegalArgumentException("insert: checkpoint at offset " + c.offset() + " has negative size " + c.checkpoint().byteSize());
            }
        }
        long now = ++clock;
        RadixNode root = root(namespace);
        root.lastAccess = now;
        RadixNode node = root;
        int n = tokens.length;
        int d = 0;
        while (d < n) {
            RadixNode child = node.child(tokens[d]);
            if (child == null) {
                int[] pages = sequence.pages(d / pageTokens, SequenceKv.ceilDiv(n, pageTokens));
                pool.retain(pages, 0, pages.length);
                child = new RadixNode(node, d, Arrays.copyOfRange(tokens, d, n), pages);
                node.putChild(child);
                added(child);
            } else {
                int common = commonPrefix(child.tokens, tokens, d, n);
                if (common < child.tokens.length) child = split(child, d + common);
            }
            child.lastAccess = now;
            node = child;
            d = child.end();
        }
        if (sequence.lockOwner == this) lockPath(sequence.lockedNode, -1);
        lockPath(node, 1);
        sequence.lockedNode = node;
        sequence.lockOwner = this;
        checkpointsToStore.stream().sorted(Comparator.comparingInt(CheckpointAt::offset))
                .forEach(c -> storeCheckpoint(root, tokens, c));
    }

    /** Evicts unlocked leaves, least recently used first, until the pool has {@code pages} free; true if it has. */
    public synchronized boolean ensureFreePages(int pages) {
        return evictUntil(() -> pool.freePages() >= pages);
    }

    /** Evicts every unlocked node (what running sequences lock stays). */
    public synchronized void evictAll() {
        evictUntil(() -> false);
    }

    public synchronized CacheStats stats() {
        long metadata = (long) nodes * NODE_OVERHEAD_BYTES + 4 * cachedTokens + 4 * pageRefs;
        return new CacheStats(nodes, cachedTokens, metadata, checkpoints, checkpointBytes, checkpointBudgetBytes,
                pool.usedPages(), pool.freePages(), pool.totalPages(), pool.usedBytes(), pool.budgetBytes(), evictedNodes,
                evictedCheckpoints, refusedCheckpoints);
    }

    // ---- package-private: sequences and tests ----

    /** Releases {@code sequence}'s path lock (called by {@link SequenceKv#close()}). */
    synchronized void unlock(SequenceKv sequence) {
        if (sequence.lockOwner != this) return;
        lockPath(sequence.lockedNode, -1);
        sequence.lockedNode = null;
        sequence.lockOwner = null;
    }

    /** Visits every node of every namespace, roots included, parents before children. */
    synchronized void forEachNode(Consumer<RadixNode> action) {
        ArrayDeque<RadixNode> stack = new ArrayDeque<>(roots.values());
        while (!stack.isEmpty()) {
            RadixNode node = stack.pop();
            action.accept(node);
            if (node.children != null) stack.addAll(node.children.values());
        }
    }

    /** The nodes holding a checkpoint, least recently used checkpoint first. */
    synchronized List<RadixNode> checkpointsByRecency() {
        return List.copyOf(checkpointLru);
    }

    synchronized Map<CacheNamespace, RadixNode> roots() {
        return Map.copyOf(roots);
    }

    // ---- the operations ----

    private RadixNode root(CacheNamespace namespace) {
        if (namespace == null) throw new IllegalArgumentException("radix cache: namespace is missing");
        return roots.computeIfAbsent(namespace, ns -> new RadixNode(null, 0, new int[0], new int[0]));
    }

    /**
     * Splits {@code node} at absolute offset {@code at} (start < at < end) into an upper node [start, at), returned,
     * and the original node, now [at, end), below it. The boundary page, if any, is retained by both.
     */
    private RadixNode split(RadixNode node, int at) {
        int k = at - node.start;
        int firstIndex = node.start / pageTokens;
        int upperPages = SequenceKv.ceilDiv(at, pageTokens) - firstIndex;
        int lowerFrom = at / pageTokens - firstIndex;
        RadixNode upper = new RadixNode(node.parent, node.start, Arrays.copyOf(node.tokens, k),
                Arrays.copyOf(node.pages, upperPages));
        upper.lockRef = node.lockRef;
        upper.lastAccess = node.lastAccess;
        node.parent.putChild(upper);
        cachedTokens -= node.tokens.length;
        pageRefs -= node.pages.length;
        node.tokens = Arrays.copyOfRange(node.tokens, k, node.tokens.length);
        node.pages = Arrays.copyOfRange(node.pages, lowerFrom, node.pages.length);
        node.start = at;
        node.parent = upper;
        upper.putChild(node);
        cachedTokens += node.tokens.length;
        pageRefs += node.pages.length;
        if (at % pageTokens != 0) pool.retain(node.pages[0]);
        added(upper);
        return upper;
    }

    /** Stores {@code at} on the node ending at its offset of the (inserted, locked) path {@code tokens}. */
    private void storeCheckpoint(RadixNode root, int[] tokens, CheckpointAt at) {
        long size = at.checkpoint().byteSize();
        if (size > checkpointBudgetBytes) {
            refusedCheckpoints++;
            return;
        }
        int offset = at.offset();
        RadixNode node = root;
        while (node.end() < offset) {
            RadixNode child = node.child(tokens[node.end()]);
            if (child.end() > offset) child = split(child, offset);
            node = child;
        }
        if (node.checkpoint != null) {
            touchCheckpoint(node);
            return;
        }
        dropCheckpointsUntil(checkpointBudgetBytes - size);
        node.checkpoint = at.checkpoint();
        checkpoints++;
        checkpointBytes += size;
        touchCheckpoint(node);
    }

    /** Drops least recently used checkpoints (their nodes stay) until their bytes are at most {@code bytes} (≥ 0). */
    private void dropCheckpointsUntil(long bytes) {
        while (checkpointBytes > bytes) {
            dropCheckpoint(checkpointLru.getFirst());
        }
    }

    private void dropCheckpoint(RadixNode node) {
        checkpointLru.remove(node);
        checkpoints--;
        checkpointBytes -= node.checkpoint.byteSize();
        node.checkpoint = null;
        evictedCheckpoints++;
    }

    /** Makes {@code node}'s checkpoint the most recently used one. */
    private void touchCheckpoint(RadixNode node) {
        node.checkpointAccess = ++clock;
        checkpointLru.remove(node);
        checkpointLru.add(node);
    }

    private boolean evictUntil(BooleanSupplier enough) {
        if (enough.getAsBoolean()) return true;
        PriorityQueue<RadixNode> leaves = new PriorityQueue<>(Comparator.comparingLong((RadixNode x) -> x.lastAccess));
        forEachNode(n -> {
            if (evictable(n)) leaves.add(n);
        });
        while (!leaves.isEmpty()) {
            RadixNode leaf = leaves.poll();
            RadixNode parent = leaf.parent;
            remove(leaf);
            if (evictable(parent)) leaves.add(parent);
            if (enough.getAsBoolean()) return true;
        }
        return false;
    }

    private static boolean evictable(RadixNode n) {
        return !n.isRoot() && n.isLeaf() && n.lockRef == 0;
    }

    private void remove(RadixNode leaf) {
        leaf.parent.children.remove(leaf.tokens[0]);
        pool.release(leaf.pages, 0, leaf.pages.length);
        if (leaf.checkpoint != null) dropCheckpoint(leaf);
        nodes--;
        cachedTokens -= leaf.tokens.length;
        pageRefs -= leaf.pages.length;
        evictedNodes++;
        leaf.parent = null;
    }

    private void added(RadixNode node) {
        nodes++;
        cachedTokens += node.tokens.length;
        pageRefs += node.pages.length;
    }

    private static void lockPath(RadixNode node, int delta) {
        for (RadixNode n = node; n != null && !n.isRoot(); n = n.parent) {
            n.lockRef += delta;
            if (n.lockRef < 0) throw new IllegalStateException("radix cache: negative lock count");
        }
    }

    /** Tokens equal between {@code edge} and tokens[from, limit), at most edge.length. */
    private static int commonPrefix(int[] edge, int[] tokens, int from, int limit) {
        int max = Math.min(edge.length, limit - from);
        int i = 0;
        while (i < max && edge[i] == tokens[from + i]) i++;
        return i;
    }

    private static void requireTokens(int[] tokens) {
        if (tokens == null || tokens.length == 0) throw new IllegalArgumentException("radix cache: no tokens");
    }
}
