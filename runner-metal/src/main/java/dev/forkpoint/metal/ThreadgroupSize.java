package dev.forkpoint.metal;

/** A Metal threadgroup's dimensions (threads per threadgroup), as passed to {@code set_thread_group}. */
public record ThreadgroupSize(int x, int y, int z) {

    public ThreadgroupSize {
        if (x < 1 || y < 1 || z < 1) {
            throw new IllegalArgumentException("threadgroup dimensions must be positive: " + x + "×" + y + "×" + z);
        }
    }

    /** The threads one threadgroup launches: what the pipeline's limit bounds. */
    public int threads() {
        return Math.multiplyExact(Math.multiplyExact(x, y), z);
    }

    @Override
    public String toString() {
        return x + "×" + y + "×" + z;
    }
}
