package dev.forkpoint.metal;

/**
 * Where an MLX backend's time went so far, cumulative since it was made (for {@code forkpoint bench decode-step}):
 * {@code hops} is how many pieces of work other threads handed to the MLX thread and waited for; {@code threadNanos}
 * the time the MLX thread spent running them; {@code evalNanos} the part of it inside {@code mlx_eval}, the
 * computing. The rest, threadNanos − evalNanos, is graph building and host work (uploads, copies, routing) on the MLX
 * thread. Subtract two of them ({@link #minus}) for an interval.
 */
public record MlxTimings(long hops, long threadNanos, long evalNanos) {
    /** The interval from {@code earlier} to this. */
    public MlxTimings minus(MlxTimings earlier) {
        return new MlxTimings(hops - earlier.hops, threadNanos - earlier.threadNanos, evalNanos - earlier.evalNanos);
    }

    /** threadNanos − evalNanos: building graphs and host work on the MLX thread. */
    public long buildNanos() {
        return threadNanos - evalNanos;
    }
}
