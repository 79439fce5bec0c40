package dev.forkpoint.kvcache;

import java.util.HashMap;
import java.util.Map;

/**
 * One edge of the radix tree and the node at its end: tokens [start, end) of every path through it, and the pool pages
 * holding their KV (table indices floor(start/P) .. ceil(end/P)−1; the first page may also be referenced by the parent
 * when start is not a page boundary). The root has no tokens and no pages.
 */
final class RadixNode {
    RadixNode parent;
    int start;
    int[] tokens;
    int[] pages;
    /** Children by their first token; null while there are none. */
    Map<Integer, RadixNode> children;
    /** Live sequences locking this node or a descendant. */
    int lockRef;
    long lastAccess;
    /** State after exactly end() tokens, or null. */
    Checkpoint checkpoint;
    /** The clock when {@link #checkpoint} was last stored or returned by a match (its own LRU stamp). */
    long checkpointAccess;

    RadixNode(RadixNode parent, int start, int[] tokens, int[] pages) {
        this.parent = parent;
        this.start = start;
        this.tokens = tokens;
        this.pages = pages;
    }

    int end() {
        return start + tokens.length;
    }

    boolean isRoot() {
        return parent == null;
    }

    boolean isLeaf() {
        return children == null || children.isEmpty();
    }

    RadixNode child(int token) {
        return children == null ? null : children.get(token);
    }

    void putChild(RadixNode child) {
        if (children == null) children = new HashMap<>(4);
        children.put(child.tokens[0], child);
    }
}
