package dev.forkpoint.metal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fault seam for the tests (package-private; nothing in the product sets it): {@link #shapeErrorInMatmul(int)}
 * makes the n-th matrix product from now on, on any MLX backend of this process, multiply an input one column short,
 * so that MLX itself reports a genuine shape error inside a step, and the engine's handling of it — the step rolled
 * back, MLX's message to that request, the next request correct, no array left behind — can be tested end to end.
 */
final class MlxFaults {
    private static final AtomicInteger COUNTDOWN = new AtomicInteger(-1);

    private MlxFaults() {}

    /** The n-th (1 = the next) matrix product fails with MLX's shape error; once. */
    static void shapeErrorInMatmul(int n) {
        if (n < 1) throw new IllegalArgumentException("n must be at least 1, got " + n);
        COUNTDOWN.set(n);
    }

    /** No fault pending. */
    static void clear() {
        COUNTDOWN.set(-1);
    }

    /** Called by every matrix product: whether this one is to fail. */
    static boolean failThisMatmul() {
        if (COUNTDOWN.get() < 0) return false;
        return COUNTDOWN.getAndUpdate(c -> c < 0 ? c : c - 1) == 1;
    }
}
