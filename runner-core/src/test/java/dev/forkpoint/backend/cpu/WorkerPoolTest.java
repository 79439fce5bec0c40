package dev.forkpoint.backend.cpu;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class WorkerPoolTest {

    @Test
    void everyTaskRunsExactlyOnceAcrossManyDispatches() {
        try (WorkerPool pool = new WorkerPool(3)) {
            SplittableRandom random = new SplittableRandom(7);
            for (int round = 0; round < 2_000; round++) {
                int tasks = 1 + random.nextInt(40);
                AtomicIntegerArray hits = new AtomicIntegerArray(tasks);
                pool.run(tasks, hits::incrementAndGet);
                for (int i = 0; i < tasks; i++) assertEquals(1, hits.get(i), "round " + round + " task " + i);
            }
        }
    }

    @Test
    void rangesCoverExactlyOnceOnGranuleBounds() {
        try (WorkerPool pool = new WorkerPool(2)) {
            for (int n : new int[] {1, 5, 32, 33, 1000}) {
                AtomicIntegerArray hits = new AtomicIntegerArray(n);
                pool.runRanges(n, 7, 8, (from, to) -> {
                    if (from % 8 != 0) throw new AssertionError("range starts at " + from);
                    for (int i = from; i < to; i++) hits.incrementAndGet(i);
                });
                for (int i = 0; i < n; i++) assertEquals(1, hits.get(i), "n " + n + " index " + i);
            }
        }
    }

    @Test
    void aFailingTaskIsRethrownAndThePoolKeepsWorking() {
        try (WorkerPool pool = new WorkerPool(2)) {
            IllegalStateException boom = new IllegalStateException("boom");
            IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> pool.run(16, i -> {
                if (i == 11) throw boom;
            }));
            assertSame(boom, thrown);
            AtomicIntegerArray hits = new AtomicIntegerArray(16);
            pool.run(16, hits::incrementAndGet);
            for (int i = 0; i < 16; i++) assertEquals(1, hits.get(i));
        }
    }
}
