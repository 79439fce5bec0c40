package dev.forkpoint.backend.cpu;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * A fixed pool of worker threads for data-parallel kernels. {@link #run} hands out task indices to the workers and
 * the calling thread alike and returns when all are done. Workers spin briefly before parking so that the many
 * short dispatches of a decode step do not pay a wake-up each. Calls to {@code run} are serialised.
 */
public final class WorkerPool implements AutoCloseable {
    private static final int SPIN_ITERATIONS = 20_000;

    /** One dispatch: its own counters, so a worker that finishes late can never take a task of the next one. */
    private record Job(IntConsumer task, int count, AtomicInteger next, AtomicInteger pending,
                       AtomicReference<RuntimeException> failure, Thread caller) {
        void drain() {
            int i;
            while ((i = next.getAndIncrement()) < count) {
                try {
                    task.accept(i);
                } catch (RuntimeException e) {
                    failure.compareAndSet(null, e);
                } finally {
                    if (pending.decrementAndGet() == 0) LockSupport.unpark(caller);
                }
            }
        }
    }

    private final Thread[] workers;
    private volatile Job current;
    private volatile boolean closed;

    /** A pool of {@code threads} threads in all: the caller plus threads − 1 workers. */
    public WorkerPool(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        workers = new Thread[threads - 1];
        for (int i = 0; i < workers.length; i++) {
            workers[i] = Thread.ofPlatform().daemon().name("forkpoint-worker-" + (i + 1)).start(this::workLoop);
        }
    }

    public int threads() { return workers.length + 1; }

    /** Runs task(0) … task(tasks − 1) across the pool and waits for all of them; rethrows the first failure. */
    public synchronized void run(int tasks, IntConsumer task) {
        if (tasks <= 0) return;
        if (tasks == 1 || workers.length == 0) {
            for (int i = 0; i < tasks; i++) task.accept(i);
            return;
        }
        Job job = new Job(task, tasks, new AtomicInteger(), new AtomicInteger(tasks), new AtomicReference<>(), Thread.currentThread());
        current = job;
        for (Thread w : workers) LockSupport.unpark(w);
        job.drain();
        int spins = 0;
        while (job.pending().get() > 0) {
            if (++spins > SPIN_ITERATIONS) LockSupport.parkNanos(20_000);
            else Thread.onSpinWait();
        }
        if (job.failure().get() != null) throw job.failure().get();
    }

    /** Splits [0, n) into about {@code parts} contiguous ranges and runs body(from, to) for each. */
    public void runRanges(int n, int parts, RangeTask body) {
        runRanges(n, parts, 1, body);
    }

    /** Splits [0, n) into at most {@code parts} ranges whose bounds are multiples of {@code granule} (except n). */
    public void runRanges(int n, int parts, int granule, RangeTask body) {
        if (n <= 0) return;
        int units = (n + granule - 1) / granule;
        int p = Math.max(1, Math.min(parts, units));
        run(p, i -> body.run(Math.min(n, (int) ((long) units * i / p) * granule),
                Math.min(n, (int) ((long) units * (i + 1) / p) * granule)));
    }

    @FunctionalInterface
    public interface RangeTask {
        void run(int from, int to);
    }

    private void workLoop() {
        Job seen = null;
        while (!closed) {
            Job job;
            int spins = 0;
            while ((job = current) == seen && !closed) {
                if (++spins > SPIN_ITERATIONS) LockSupport.park(this);
                else Thread.onSpinWait();
            }
            if (closed) return;
            seen = job;
            job.drain();
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Thread w : workers) LockSupport.unpark(w);
    }
}
