package dev.forkpoint.backend.cpu;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The activation arrays of the CPU ops, reused from one engine step to the next: a decode loop asks for the same
 * shapes in the same order every step, so after its first step it allocates no activation at all.
 *
 * <p>Invariants:
 * <ul>
 * <li>Arrays are handed out only on the thread that opened the step ({@link #open}), and only while it is open; any
 *     other caller (a second step on another thread, an op called outside a step) gets a new array, as before.</li>
 * <li>An array handed out is all zeros, exactly like {@code new float[n]}: ops that accumulate into their output
 *     need not know where it came from.</li>
 * <li>Nothing may hold a handed-out array past the step's {@link #close}: the ops' outputs live within the step (KV
 *     writes and recurrent state copy what they keep; logits are copied out).</li>
 * <li>Between steps, only the arrays the last step used are kept (what one step did not ask for is dropped at its
 *     close), and one step takes at most {@code limitBytes} from here; beyond that it allocates as before — a long
 *     prefill's activations are left to the garbage collector, a decode step's are kept. The working set kept is
 *     therefore at most {@code limitBytes}.</li>
 * </ul>
 */
final class StepBuffers {
    /** The default bound: a 16-row decode step of an 8B model (≈ 3 MB of activations per row and 32 layers) fits. */
    static final long DEFAULT_LIMIT_BYTES = 64L << 20;

    private final long limitBytes;
    private final AtomicReference<Thread> owner = new AtomicReference<>();
    // touched only by the owner thread, between open and close
    private Map<Integer, ArrayDeque<float[]>> free = new HashMap<>();
    private Map<Integer, ArrayDeque<float[]>> used = new HashMap<>();
    private long handedBytes;
    private long allocated;   // arrays made new inside a step: the first step's, shapes the last step did not have

    StepBuffers(long limitBytes) {
        if (limitBytes < 0) throw new IllegalArgumentException("limit " + limitBytes);
        this.limitBytes = limitBytes;
    }

    /**
     * Opens a step on the calling thread; false when a step is already open (on any thread), in which case this
     * caller's ops allocate as before and it must not call {@link #close}.
     */
    boolean open() {
        return owner.compareAndSet(null, Thread.currentThread());
    }

    /** A zeroed array of n floats: one the last step used, when this thread's step is open and within the limit. */
    float[] floats(int n) {
        if (owner.get() != Thread.currentThread() || handedBytes + 4L * n > limitBytes) return new float[n];
        ArrayDeque<float[]> list = free.get(n);
        float[] a = list == null ? null : list.poll();
        if (a == null) {
            a = new float[n];
            allocated++;
        } else {
            Arrays.fill(a, 0f);
        }
        used.computeIfAbsent(n, k -> new ArrayDeque<>()).add(a);
        handedBytes += 4L * n;
        return a;
    }

    /** Closes the step opened by {@link #open} on this thread: its arrays become the next step's; the rest are dropped. */
    void close() {
        if (owner.get() != Thread.currentThread()) throw new IllegalStateException("no step open on " + Thread.currentThread());
        Map<Integer, ArrayDeque<float[]>> dropped = free;
        free = used;
        dropped.clear();
        used = dropped;
        handedBytes = 0;
        owner.set(null);
    }

    /** Arrays made new inside steps so far (reuse misses; outside a step or beyond the limit not counted). */
    long allocated() {
        return allocated;
    }

    /** Bytes of the arrays kept for the next step (a test's and a benchmark's view of the working set). */
    long keptBytes() {
        long bytes = 0;
        for (Map.Entry<Integer, ArrayDeque<float[]>> e : free.entrySet()) bytes += 4L * e.getKey() * e.getValue().size();
        return bytes;
    }
}
