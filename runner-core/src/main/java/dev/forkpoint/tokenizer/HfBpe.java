package dev.forkpoint.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * BPE as the Hugging Face {@code tokenizers} library runs it on one word: the word's characters (or, with
 * {@code byte_fallback}, the {@code <0xNN>} tokens of a character outside the vocabulary; else the unknown token,
 * runs of them fused with {@code fuse_unk}) are merged pairwise, lowest merge rank first, leftmost first on ties.
 * With {@code ignore_merges} a word that is itself a token is taken whole.
 */
final class HfBpe {
    private final Map<String, Integer> vocab;
    private final PairTable merges;
    private final int unknown;
    private final boolean byteFallback, fuseUnknown, ignoreMerges;
    private final int[] byteTokens = new int[256];

    /**
     * @param merges  (left id, right id) → (rank, merged id)
     * @param unknown the unknown token's id, or -1 when the model has none
     */
    HfBpe(Map<String, Integer> vocab, PairTable merges, int unknown, boolean byteFallback, boolean fuseUnknown,
          boolean ignoreMerges) {
        this.vocab = vocab;
        this.merges = merges;
        this.unknown = unknown;
        this.byteFallback = byteFallback;
        this.fuseUnknown = fuseUnknown;
        this.ignoreMerges = ignoreMerges;
        for (int b = 0; b < 256; b++) byteTokens[b] = vocab.getOrDefault(String.format("<0x%02X>", b), -1);
    }

    /** Merges built from "left right" ranks: {@code merges[rank] = {left, right}} pieces of {@code vocab}. */
    static PairTable mergesOf(Map<String, Integer> vocab, String[][] pairs, java.util.function.IntFunction<RuntimeException> error) {
        PairTable out = new PairTable(pairs.length);
        for (int rank = 0; rank < pairs.length; rank++) {
            Integer l = vocab.get(pairs[rank][0]), r = vocab.get(pairs[rank][1]), m = vocab.get(pairs[rank][0] + pairs[rank][1]);
            if (l == null || r == null || m == null) throw error.apply(rank);
            out.putIfAbsent(l, r, rank, m);
        }
        return out;
    }

    /** Appends the ids of one word to {@code out}. */
    void encode(String word, IdList out) {
        if (ignoreMerges) {
            Integer whole = vocab.get(word);
            if (whole != null) {
                out.add(whole);
                return;
            }
        }
        // Initial symbols.
        int n0 = word.length();
        int[] ids = new int[n0 * 4 + 1];
        int n = 0;
        int pendingUnknown = -1;
        for (int i = 0; i < word.length(); ) {
            int cp = word.codePointAt(i);
            int len = Character.charCount(cp);
            String ch = word.substring(i, i + len);
            i += len;
            Integer id = vocab.get(ch);
            if (id != null) {
                if (pendingUnknown >= 0) {
                    ids[n++] = pendingUnknown;
                    pendingUnknown = -1;
                }
                ids[n++] = id;
                continue;
            }
            if (byteFallback) {
                byte[] bytes = ch.getBytes(StandardCharsets.UTF_8);
                boolean all = true;
                for (byte b : bytes) all &= byteTokens[b & 0xFF] >= 0;
                if (all) {
                    for (byte b : bytes) ids[n++] = byteTokens[b & 0xFF];
                    continue;
                }
            }
            if (unknown >= 0) {
                if (pendingUnknown >= 0 && !fuseUnknown) ids[n++] = pendingUnknown;
                pendingUnknown = unknown;
            }
        }
        if (pendingUnknown >= 0) ids[n++] = pendingUnknown;
        merge(ids, n, out);
    }

    /** A possible merge of the symbol at {@code left} with its successor into {@code merged}. */
    private record Candidate(int rank, int left, int merged) {}

    private void merge(int[] ids, int n, IdList out) {
        int[] prev = new int[n], next = new int[n];
        boolean[] gone = new boolean[n];
        for (int i = 0; i < n; i++) {
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        PriorityQueue<Candidate> queue = new PriorityQueue<>((a, b) -> a.rank != b.rank
                ? Integer.compare(a.rank, b.rank) : Integer.compare(a.left, b.left));
        for (int i = 0; i + 1 < n; i++) offer(queue, ids, i, i + 1);
        while (!queue.isEmpty()) {
            Candidate c = queue.poll();
            int l = c.left;
            if (gone[l] || next[l] < 0) continue;
            int r = next[l];
            long m = merges.get(ids[l], ids[r]);
            if (m < 0 || (int) m != c.merged) continue;
            ids[l] = c.merged;
            gone[r] = true;
            next[l] = next[r];
            if (next[r] >= 0) prev[next[r]] = l;
            if (prev[l] >= 0) offer(queue, ids, prev[l], l);
            if (next[l] >= 0) offer(queue, ids, l, next[l]);
        }
        for (int i = n > 0 ? 0 : -1; i >= 0; i = next[i]) out.add(ids[i]);
    }

    private void offer(PriorityQueue<Candidate> queue, int[] ids, int l, int r) {
        long m = merges.get(ids[l], ids[r]);
        if (m >= 0) queue.add(new Candidate((int) (m >>> 32), l, (int) m));
    }
}
