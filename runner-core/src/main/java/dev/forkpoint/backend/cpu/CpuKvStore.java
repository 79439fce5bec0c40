package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.KvStore;

/**
 * Keys and values in pages of {@link #PAGE_TOKENS} positions per layer, allocated as positions are first written,
 * so a store sized for a long context costs memory only for what it holds. Page layout: [position][kvDim] floats.
 */
final class CpuKvStore implements KvStore {
    static final int PAGE_TOKENS = 256;

    private final int layers;
    private final int kvDim;
    private final int capacity;
    private final float[][][] keys;   // [layer][page] → PAGE_TOKENS × kvDim
    private final float[][][] values;
    private int length;

    CpuKvStore(int layers, int kvDim, int capacity) {
        if (layers <= 0 || kvDim <= 0 || capacity <= 0) {
            throw new IllegalArgumentException("kv store needs positive sizes: layers=" + layers + " kvDim=" + kvDim + " capacity=" + capacity);
        }
        this.layers = layers;
        this.kvDim = kvDim;
        this.capacity = capacity;
        int pages = (capacity + PAGE_TOKENS - 1) / PAGE_TOKENS;
        keys = new float[layers][pages][];
        values = new float[layers][pages][];
    }

    public int layers() { return layers; }
    public int kvDim() { return kvDim; }
    public int capacity() { return capacity; }
    public int length() { return length; }

    public void setLength(int length) {
        if (length < 0 || length > capacity) {
            throw new IndexOutOfBoundsException("kv length " + length + " outside [0, " + capacity + "]");
        }
        this.length = length;
    }

    /** Copies one position's key and value (kvDim floats each, from k[kOff…], v[vOff…]) into the store. */
    void write(int layer, int position, float[] k, int kOff, float[] v, int vOff) {
        if (position < 0 || position >= capacity) {
            throw new IndexOutOfBoundsException("kv position " + position + " outside the store's capacity " + capacity);
        }
        int page = position / PAGE_TOKENS;
        int at = (position % PAGE_TOKENS) * kvDim;
        System.arraycopy(k, kOff, keyPage(layer, page), at, kvDim);
        System.arraycopy(v, vOff, valuePage(layer, page), at, kvDim);
    }

    float[] keyPage(int layer, int page) {
        float[] p = keys[layer][page];
        if (p == null) p = keys[layer][page] = new float[PAGE_TOKENS * kvDim];
        return p;
    }

    float[] valuePage(int layer, int page) {
        float[] p = values[layer][page];
        if (p == null) p = values[layer][page] = new float[PAGE_TOKENS * kvDim];
        return p;
    }
}
