package dev.forkpoint.engine;

/**
 * What a forward pass costs on this machine and model, learnt from the passes the scheduler runs: a pass of n token
 * rows takes about {@code fixed + perToken · n} (the fixed part is reading the weights once, the per-token part the
 * arithmetic of each row), fitted by least squares over the recent passes (each older one weighs {@link #DECAY} as
 * much as the next), so that a change of load on the machine shows within a few dozen steps.
 *
 * <p>Invariants: the estimates are never negative; before two passes of different sizes were seen the per-token cost
 * is unknown and {@link #tokensWithin} answers {@link #FIRST_CHUNK}, a small chunk that teaches it. Not thread-safe:
 * the scheduler thread's only.
 */
final class StepCosts {
    static final double DECAY = 0.95;
    /** Prefill tokens of a step before the per-token cost is known. */
    static final int FIRST_CHUNK = 16;
    /** Prefill tokens of a step at least, whatever the estimates say: a long prompt always advances. */
    static final int MIN_CHUNK = 4;

    private double w, sx, sy, sxx, sxy;   // exponentially weighted sums over (tokens, nanos)

    /** A pass of {@code tokens} rows took {@code nanos}. */
    void record(int tokens, long nanos) {
        if (tokens < 1 || nanos < 0) return;
        w = DECAY * w + 1;
        sx = DECAY * sx + tokens;
        sy = DECAY * sy + nanos;
        sxx = DECAY * sxx + (double) tokens * tokens;
        sxy = DECAY * sxy + (double) tokens * nanos;
    }

    /** Nanoseconds per token row beyond the first, or NaN while unknown (fewer than two pass sizes seen). */
    double perTokenNanos() {
        double var = w * sxx - sx * sx;
        if (w == 0 || var <= 1e-9 * w * sxx) return Double.NaN;
        return Math.max(0, (w * sxy - sx * sy) / var);
    }

    /** Nanoseconds of a pass of {@code tokens} rows by the fit (the mean cost per row while the slope is unknown; 0 with no data). */
    double estimate(int tokens) {
        if (w == 0) return 0;
        double b = perTokenNanos();
        if (Double.isNaN(b)) return sy / sx * tokens;
        double a = Math.max(0, (sy - b * sx) / w);
        return a + b * tokens;
    }

    /**
     * Prefill tokens that fit beside {@code decodeRows} decode rows in a pass of at most {@code targetNanos}: at least
     * {@link #MIN_CHUNK}, {@link #FIRST_CHUNK} while the per-token cost is unknown.
     */
    int tokensWithin(long targetNanos, int decodeRows) {
        double b = perTokenNanos();
        if (Double.isNaN(b)) return FIRST_CHUNK;
        if (b == 0) return Integer.MAX_VALUE;
        double room = targetNanos - estimate(decodeRows);
        return (int) Math.max(MIN_CHUNK, Math.min(Integer.MAX_VALUE, Math.floor(room / b)));
    }
}
