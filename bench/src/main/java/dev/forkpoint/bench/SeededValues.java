package dev.forkpoint.bench;

/**
 * A fast, seeded stream of approximately normal values: SplitMix64 outputs, each split into four 16-bit uniforms
 * whose sum (Irwin–Hall) is rescaled to mean 0 and the requested standard deviation. Tails are bounded at ±3.46 σ,
 * which suits random weights. The same seed always gives the same values.
 */
final class SeededValues {
    private static final double SUM_MEAN = 4 * 65535 / 2.0;
    /** Standard deviation of the sum of four independent uniforms on 0 … 65535. */
    private static final double SUM_STD = Math.sqrt((65536.0 * 65536.0 - 1) / 3.0);

    private long state;

    SeededValues(long seed) {
        this.state = seed;
    }

    /** A seed for chunk {@code chunk} of tensor {@code tensor}, independent of the order chunks are generated in. */
    static long chunkSeed(long seed, int tensor, long chunk) {
        return mix(mix(seed ^ 0x5DEECE66DL) + mix(((long) tensor << 40) ^ chunk));
    }

    long nextLong() {
        state += 0x9E3779B97F4A7C15L;
        return mix(state);
    }

    /** Fills dst[off … off+count) with mean 0, standard deviation {@code std}. */
    void fillNormal(float[] dst, int off, int count, float std) {
        float scale = (float) (std / SUM_STD);
        for (int i = 0; i < count; i++) {
            long r = nextLong();
            long sum = (r & 0xFFFF) + ((r >>> 16) & 0xFFFF) + ((r >>> 32) & 0xFFFF) + (r >>> 48);
            dst[off + i] = (float) ((sum - SUM_MEAN) * scale);
        }
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
