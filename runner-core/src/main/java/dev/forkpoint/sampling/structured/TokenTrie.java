package dev.forkpoint.sampling.structured;

import dev.forkpoint.tokenizer.Tokenizer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.WeakHashMap;

/**
 * A vocabulary prepared for token masks, built once per tokenizer ({@link #of}) and shared: the tokens' bytes in two
 * tries — the tokens made only of plain JSON-string characters (complete UTF-8, no quote, backslash or control
 * character) and all others — and, for the plain ones, their length in characters. Inside a JSON string a plain token
 * of n characters is allowed exactly when n characters still fit, so that part of a mask is a precomputed set
 * ({@link #plainUpTo}); everything else is found by walking a {@link MatchState} down a trie, a subtree abandoned at
 * its first byte the grammar refuses. Tokens without bytes (control tokens) are in neither trie; the end-of-generation
 * ids are listed apart.
 */
public final class TokenTrie {
    private static final Map<Tokenizer, TokenTrie> CACHE = new WeakHashMap<>();

    final int vocabSize;
    final int words;
    final Trie plain, other;
    final int[] endOfGeneration;
    private final long[][] plainUpTo;   // [n] = plain tokens of 1..n characters
    final byte[][] bytes;

    /** The prepared vocabulary of {@code tokenizer}, built on first use and kept while the tokenizer lives. */
    public static TokenTrie of(Tokenizer tokenizer) {
        synchronized (CACHE) {
            return CACHE.computeIfAbsent(tokenizer, TokenTrie::new);
        }
    }

    private TokenTrie(Tokenizer tokenizer) {
        vocabSize = tokenizer.vocabSize();
        words = (vocabSize + 63) >>> 6;
        bytes = new byte[vocabSize][];
        Builder plainB = new Builder(), otherB = new Builder();
        List<Integer> eog = new ArrayList<>();
        int[] plainLength = new int[vocabSize];
        int longest = 0;
        for (int id = 0; id < vocabSize; id++) {
            if (tokenizer.isEndOfGeneration(id)) eog.add(id);
            byte[] b = tokenizer.tokenBytes(id);
            bytes[id] = b;
            if (b.length == 0) continue;
            int n = plainCharacters(b);
            plainLength[id] = n;
            if (n > 0) {
                plainB.add(b, id);
                longest = Math.max(longest, n);
            } else {
                otherB.add(b, id);
            }
        }
        endOfGeneration = eog.stream().mapToInt(Integer::intValue).toArray();
        plain = plainB.build();
        other = otherB.build();
        plainUpTo = new long[longest + 1][];
        long[] acc = new long[words];
        plainUpTo[0] = acc.clone();
        for (int n = 1; n <= longest; n++) {
            for (int id = 0; id < vocabSize; id++) if (plainLength[id] == n) acc[id >>> 6] |= 1L << id;
            plainUpTo[n] = acc.clone();
        }
    }

    /** Plain tokens of at most n characters (a shared array: do not modify). */
    long[] plainUpTo(int n) {
        return plainUpTo[Math.min(n, plainUpTo.length - 1)];
    }

    /** Characters of a token made only of plain JSON-string characters, or 0 when it is not. */
    static int plainCharacters(byte[] b) {
        int chars = 0;
        for (int i = 0; i < b.length; ) {
            int c = b[i] & 0xff;
            int need;
            if (c < 0x20 || c == MatchState.QUOTE || c == MatchState.BACKSLASH) return 0;
            if (c < 0x80) need = 0;
            else if (c >= 0xc2 && c <= 0xdf) need = 1;
            else if (c >= 0xe0 && c <= 0xef) need = 2;
            else if (c >= 0xf0 && c <= 0xf4) need = 3;
            else return 0;
            if (i + need >= b.length && need > 0) return 0;   // a character cut at the token's end
            int lo = 0x80, hi = 0xbf;
            if (c == 0xe0) lo = 0xa0;
            if (c == 0xed) hi = 0x9f;
            if (c == 0xf0) lo = 0x90;
            if (c == 0xf4) hi = 0x8f;
            for (int k = 1; k <= need; k++) {
                int d = b[i + k] & 0xff;
                if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xbf)) return 0;
            }
            i += need + 1;
            chars++;
        }
        return chars;
    }

    /** A trie in arrays: node i's edges are [edgeStart[i], edgeStart[i + 1]); its tokens [tokenStart[i], tokenStart[i + 1]). */
    static final class Trie {
        final int[] edgeStart, edgeTarget, tokenStart, tokens;
        final byte[] edgeByte;

        Trie(int[] edgeStart, byte[] edgeByte, int[] edgeTarget, int[] tokenStart, int[] tokens) {
            this.edgeStart = edgeStart;
            this.edgeByte = edgeByte;
            this.edgeTarget = edgeTarget;
            this.tokenStart = tokenStart;
            this.tokens = tokens;
        }

        int nodes() { return tokenStart.length - 1; }
    }

    private static final class Builder {
        private static final class Node {
            final TreeMap<Integer, Node> children = new TreeMap<>();
            final List<Integer> tokens = new ArrayList<>(1);
            int index;
        }

        private final Node root = new Node();
        private int count = 1;

        void add(byte[] b, int id) {
            Node n = root;
            for (byte x : b) {
                Node c = n.children.get(x & 0xff);
                if (c == null) {
                    n.children.put(x & 0xff, c = new Node());
                    count++;
                }
                n = c;
            }
            n.tokens.add(id);
        }

        Trie build() {
            List<Node> order = new ArrayList<>(count);
            order.add(root);
            for (int i = 0; i < order.size(); i++) {   // breadth-first numbering
                Node n = order.get(i);
                n.index = i;
                order.addAll(n.children.values());
            }
            int nodes = order.size();
            int[] edgeStart = new int[nodes + 1], tokenStart = new int[nodes + 1];
            int edges = nodes - 1, tokenCount = 0;
            for (Node n : order) tokenCount += n.tokens.size();
            byte[] edgeByte = new byte[edges];
            int[] edgeTarget = new int[edges], tokens = new int[tokenCount];
            int e = 0, t = 0;
            for (int i = 0; i < nodes; i++) {
                Node n = order.get(i);
                edgeStart[i] = e;
                tokenStart[i] = t;
                for (var c : n.children.entrySet()) {
                    edgeByte[e] = (byte) (int) c.getKey();
                    edgeTarget[e++] = c.getValue().index;
                }
                for (int id : n.tokens) tokens[t++] = id;
            }
            edgeStart[nodes] = e;
            tokenStart[nodes] = t;
            return new Trie(edgeStart, edgeByte, edgeTarget, tokenStart, tokens);
        }
    }

    @Override
    public String toString() {
        return "TokenTrie[vocab=" + vocabSize + ", plain nodes=" + plain.nodes() + ", other nodes=" + other.nodes()
                + ", end-of-generation=" + Arrays.toString(endOfGeneration) + "]";
    }
}
