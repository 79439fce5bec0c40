package dev.forkpoint.metal;

import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The thread limits MLX errors have reported, per pipeline (a kernel name with its specialisation), so that a plan
 * made after one failure never asks for more again. A remembered limit only goes down. Thread-safe.
 */
public final class RememberedLimits {

    private static final System.Logger LOG = System.getLogger(RememberedLimits.class.getName());

    private final ConcurrentMap<String, Integer> limits = new ConcurrentHashMap<>();

    /** Remembers {@code limit} for {@code pipeline} unless a lower one is remembered already. */
    public void remember(String pipeline, int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("threadgroup limit must be positive, got " + limit);
        }
        Integer before = limits.get(pipeline);
        int now = limits.merge(pipeline, limit, Math::min);
        if (before == null || now < before) {
            LOG.log(System.Logger.Level.DEBUG, "pipeline {0}: at most {1} threads per threadgroup from now on",
                    pipeline, now);
        }
    }

    public OptionalInt remembered(String pipeline) {
        Integer limit = limits.get(pipeline);
        return limit == null ? OptionalInt.empty() : OptionalInt.of(limit);
    }

    /** The smaller of {@code reported} (what the pipeline says) and the limit remembered for it. */
    public int effectiveLimit(String pipeline, int reported) {
        Integer limit = limits.get(pipeline);
        return limit == null ? reported : Math.min(reported, limit);
    }
}
