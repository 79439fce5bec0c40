package dev.forkpoint.tokenizer;

import java.util.Arrays;

/**
 * BPE merges: (left id, right id) → (rank, merged id), in an open-addressing table of primitive longs, since a
 * vocabulary has hundreds of thousands of them and encoding looks one up per adjacent pair. The first value put
 * for a pair stays. Not thread-safe while filled; read-only afterwards.
 */
final class PairTable {
    private static final long EMPTY = -1L;

    private long[] keys, values;
    private int size;

    PairTable(int expected) {
        int capacity = Integer.highestOneBit(Math.max(16, expected * 2 - 1)) << 1;
        keys = new long[capacity];
        values = new long[capacity];
        Arrays.fill(keys, EMPTY);
    }

    static long pair(int left, int right) { return ((long) left << 32) | (right & 0xFFFFFFFFL); }

    int size() { return size; }

    /** Adds the merge unless the pair already has one. Ids and rank must be non-negative. */
    void putIfAbsent(int left, int right, int rank, int merged) {
        if ((size + 1) * 2 > keys.length) grow();
        long key = pair(left, right);
        int i = slot(key);
        if (keys[i] == EMPTY) {
            keys[i] = key;
            values[i] = ((long) rank << 32) | (merged & 0xFFFFFFFFL);
            size++;
        }
    }

    /** (rank << 32 | merged id) for the pair, or -1 when it does not merge. */
    long get(int left, int right) {
        long key = pair(left, right);
        long k;
        for (int i = mix(key) & (keys.length - 1); (k = keys[i]) != EMPTY; i = (i + 1) & (keys.length - 1)) {
            if (k == key) return values[i];
        }
        return -1;
    }

    private int slot(long key) {
        int i = mix(key) & (keys.length - 1);
        while (keys[i] != EMPTY && keys[i] != key) i = (i + 1) & (keys.length - 1);
        return i;
    }

    private static int mix(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 29));
    }

    private void grow() {
        long[] oldKeys = keys, oldValues = values;
        keys = new long[oldKeys.length * 2];
        values = new long[oldKeys.length * 2];
        Arrays.fill(keys, EMPTY);
        for (int j = 0; j < oldKeys.length; j++) {
            if (oldKeys[j] == EMPTY) continue;
            int i = slot(oldKeys[j]);
            keys[i] = oldKeys[j];
            values[i] = oldValues[j];
        }
    }
}
