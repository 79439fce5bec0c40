package dev.forkpoint.backend.cpu;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * The arrays the CPU ops and kernels need within one engine step — activations, quantised activations, attention
 * scratch — reused from one step to the next: a decode loop asks for the same sizes in the same order every step, so
 * after its first step it allocates none of them.
 *
 * <p>Invariants:
 * <ul>
 * <li>Arrays are handed out only on the thread that opened the step ({@link #open}), and only while it is open; any
 *     other caller (a second step on another thread, an op called outside a step, a pool worker) gets a new array,
 *     as before. Code that cannot see the backend asks {@link #onThisThread} for the step open on its thread.</li>
 * <li>An array is handed out at most once per step (never two live users), and all zeros, exactly like
 *     {@code new float[n]}: code that accumulates into it need not know where it came from.</li>
 * <li>Nothing may hold a handed-out array past the step's {@link #close}: the ops' outputs live within the step (KV
 *     writes and recurrent state copy what they keep; logits are copied out).</li>
 * <li>Between steps, only the arrays the last step used are kept (what one step did not ask for is dropped at its
 *     close), and one step takes at most {@code limitBytes} from here; beyond that it allocates as before — a long
 *     prefill's arrays are left to the garbage collector, a decode step's are kept. The working set kept is therefore
 *     at most {@code limitBytes}.</li>
 * </ul>
 */
final class StepBuffers {
    /** The default bound: a 16-row decode step of an 8B model (≈ 3 MB of activations per row and 32 layers) fits. */
    static final long DEFAULT_LIMIT_BYTES = 64L << 20;
    private static final ThreadLocal<StepBuffers> OPEN = new ThreadLocal<>();

    private final long limitBytes;
    private final AtomicReference<Thread> owner = new AtomicReference<>();
    // touched only by the owner thread, between open and close
    private final Kind<float[]> floats = new Kind<>(float[]::new, a -> Arrays.fill(a, 0f), Float.BYTES);
    private final Kind<short[]> shorts = new Kind<>(short[]::new, a -> Arrays.fill(a, (short) 0), Short.BYTES);
    private final Kind<byte[]> bytes = new Kind<>(byte[]::new, a -> Arrays.fill(a, (byte) 0), 1);
    private long handedBytes;
    private long allocated;   // arrays made new inside a step: the first step's, sizes the last step did not have

    StepBuffers(long limitBytes) {
        if (limitBytes < 0) throw new IllegalArgumentException("limit " + limitBytes);
        this.limitBytes = limitBytes;
    }

    /**
     * Opens a step on the calling thread; false when a step is already open (on any thread), in which case this
     * caller's ops allocate as before and it must not call {@link #close}.
     */
    boolean open() {
        if (!owner.compareAndSet(null, Thread.currentThread())) return false;
        OPEN.set(this);
        return true;
    }

    /** The step buffers open on the calling thread, or null. */
    static StepBuffers onThisThread() {
        return OPEN.get();
    }

    /** A zeroed array of n floats: one the last step used, when this thread's step is open and within the limit. */
    float[] floats(int n) {
        return take(floats, n);
    }

    /** {@link #floats} for shorts. */
    short[] shorts(int n) {
        return take(shorts, n);
    }

    /** {@link #floats} for bytes. */
    byte[] bytes(int n) {
        return take(bytes, n);
    }

    /** n floats from the step open on this thread, or new ones. */
    static float[] floatsHere(int n) {
        StepBuffers b = OPEN.get();
        return b == null ? new float[n] : b.floats(n);
    }

    /** n shorts from the step open on this thread, or new ones. */
    static short[] shortsHere(int n) {
        StepBuffers b = OPEN.get();
        return b == null ? new short[n] : b.shorts(n);
    }

    /** n bytes from the step open on this thread, or new ones. */
    static byte[] bytesHere(int n) {
        StepBuffers b = OPEN.get();
        return b == null ? new byte[n] : b.bytes(n);
    }

    private <A> A take(Kind<A> kind, int n) {
        long size = (long) kind.elementBytes * n;
        if (owner.get() != Thread.currentThread() || handedBytes + size > limitBytes) return kind.make.apply(n);
        A a = kind.take(n);
        if (a == null) {
            a = kind.make.apply(n);
            allocated++;
        }
        kind.used.computeIfAbsent(n, k -> new ArrayDeque<>()).add(a);
        handedBytes += size;
        return a;
    }

    /** Closes the step opened by {@link #open} on this thread: its arrays become the next step's; the rest are dropped. */
    void close() {
        if (owner.get() != Thread.currentThread()) throw new IllegalStateException("no step open on " + Thread.currentThread());
        floats.turn();
        shorts.turn();
        bytes.turn();
        handedBytes = 0;
        OPEN.remove();
        owner.set(null);
    }

    /** Arrays made new inside steps so far (reuse misses; outside a step or beyond the limit not counted). */
    long allocated() {
        return allocated;
    }

    /** Bytes of the arrays kept for the next step (the tests' view of the working set). */
    long keptBytes() {
        return floats.keptBytes() + shorts.keptBytes() + bytes.keptBytes();
    }

    /** The free and used lists of one element type, by length. */
    private static final class Kind<A> {
        final IntFunction<A> make;
        final Consumer<A> zero;
        final int elementBytes;
        Map<Integer, ArrayDeque<A>> free = new HashMap<>(), used = new HashMap<>();

        Kind(IntFunction<A> make, Consumer<A> zero, int elementBytes) {
            this.make = make;
            this.zero = zero;
            this.elementBytes = elementBytes;
        }

        /** A free array of length n, zeroed, or null. */
        A take(int n) {
            ArrayDeque<A> list = free.get(n);
            A a = list == null ? null : list.poll();
            if (a != null) zero.accept(a);
            return a;
        }

        /** The step's arrays become the free ones; the free ones it did not take are dropped. */
        void turn() {
            Map<Integer, ArrayDeque<A>> dropped = free;
            free = used;
            dropped.clear();
            used = dropped;
        }

        long keptBytes() {
            long b = 0;
            for (Map.Entry<Integer, ArrayDeque<A>> e : free.entrySet()) b += (long) elementBytes * e.getKey() * e.getValue().size();
            return b;
        }
    }
}
