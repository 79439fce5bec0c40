package dev.forkpoint.engine;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;

import java.util.List;
import java.util.function.Predicate;

/**
 * Ops that delegate to real ones and throw {@link InjectedFault} on the k-th attention call after {@link #armAt(int)}
 * (counting from 1), once; the attention's own KV writes have not happened then, as when a backend kernel fails.
 */
final class FaultyOps extends ForwardingOps {
    static final class InjectedFault extends RuntimeException {
        InjectedFault(String message) { super(message); }
    }

    private int countdown;   // 0 = disarmed
    private boolean afterWrites;
    private int attentionCalls;
    private volatile Predicate<Segment> condition;
    private volatile int batchedFaults;
    private volatile boolean recording;
    private final List<List<SegmentSeen>> passes = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** One segment of a recorded pass: its store (identity), first position and token count. */
    record SegmentSeen(Object kv, int startPos, int tokens) {}

    /** Starts (clearing what was recorded) or stops recording the segments of every forward pass (seen at layer 0). */
    void record(boolean on) {
        if (on) passes.clear();
        recording = on;
    }

    /** The recorded passes, in order. */
    List<List<SegmentSeen>> passes() { return List.copyOf(passes); }

    /** Faults thrown by {@link #failWhen} in a pass over more than one segment. */
    int batchedFaults() { return batchedFaults; }

    FaultyOps(Ops delegate) { super(delegate); }

    /**
     * Throws on the k-th attention call from now on (k ≥ 1): before it runs, or, with {@code afterWrites}, after it
     * has written that layer's K/V into the open step (a step failing half-way).
     */
    void armAt(int k, boolean afterWrites) {
        countdown = k;
        this.afterWrites = afterWrites;
        attentionCalls = 0;
    }

    void disarm() {
        countdown = 0;
        condition = null;
    }

    int attentionCalls() { return attentionCalls; }

    /**
     * From now on, throws (before any K/V is written) on every attention call whose pass includes a segment that
     * {@code condition} accepts, until {@link #disarm()}: a fault tied to one sequence's data, whatever it is batched with.
     */
    void failWhen(Predicate<Segment> condition) { this.condition = condition; }

    private volatile long passNanos, rowNanos;

    /**
     * From now on, every forward pass takes at least {@code perPass + perRow · rows} longer (slept at layer 0): a model
     * whose pass costs the test controls, far above the real ones of the tiny test models. (0, 0) stops it.
     */
    void slowDown(java.time.Duration perPass, java.time.Duration perRow) {
        passNanos = perPass.toNanos();
        rowNanos = perRow.toNanos();
    }

    public Activation attention(Activation q, Activation k, Activation v, List<Segment> segments, int layer,
                                int heads, int kvHeads, int headDim) {
        attentionCalls++;
        if (layer == 0 && (passNanos > 0 || rowNanos > 0)) {
            long until = System.nanoTime() + passNanos + rowNanos * Segment.rows(segments);
            for (long left; (left = until - System.nanoTime()) > 0; ) java.util.concurrent.locks.LockSupport.parkNanos(left);
        }
        int startPos = segments.get(0).startPos();
        if (recording && layer == 0) {
            passes.add(segments.stream().map(s -> new SegmentSeen(s.kv(), s.startPos(), s.tokens().length)).toList());
        }
        Predicate<Segment> c = condition;
        if (c != null) {
            for (Segment s : segments) {
                if (c.test(s)) {
                    if (segments.size() > 1) batchedFaults++;
                    throw fault(layer, s.startPos());
                }
            }
        }
        boolean fire = countdown > 0 && --countdown == 0;
        if (fire && !afterWrites) throw fault(layer, startPos);
        Activation out = delegate.attention(q, k, v, segments, layer, heads, kvHeads, headDim);
        if (fire) throw fault(layer, startPos);
        return out;
    }

    private volatile Predicate<List<Segment>> deltaFault;

    /**
     * Throws once, on the first gated-delta-rule call whose segments {@code when} accepts, after it has run: the linear
     * layer's new state is already written into the open step, as when a later kernel of the step fails.
     */
    void failDeltaRuleWhen(Predicate<List<Segment>> when) { deltaFault = when; }

    public Activation gatedDeltaRule(Activation q, Activation k, Activation v, Activation a, Activation b, dev.forkpoint.backend.Weight aLog,
                                     dev.forkpoint.backend.Weight dtBias, List<Segment> segments, int layer, int keyHeads, int valueHeads,
                                     int keyDim, int valueDim) {
        Activation out = delegate.gatedDeltaRule(q, k, v, a, b, aLog, dtBias, segments, layer, keyHeads, valueHeads, keyDim, valueDim);
        Predicate<List<Segment>> when = deltaFault;
        if (when != null && when.test(segments)) {
            deltaFault = null;
            throw new InjectedFault("injected fault: gated delta rule of linear layer " + layer + " at positions from " + segments.get(0).startPos());
        }
        return out;
    }

    private InjectedFault fault(int layer, int startPos) {
        return new InjectedFault("injected fault: attention call " + attentionCalls + " (layer " + layer + ", positions from " + startPos + ")");
    }
}
