package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * Activations for benchmarks that go through a backend's public ops: a seeded Gaussian F32 table loaded as a weight,
 * whose rows {@link dev.forkpoint.backend.Ops#embed embed} turns into an activation of {@code tokens} × {@code width}.
 */
final class CpuFixtures {
    private CpuFixtures() {}

    /** tokens × width activation of N(0, 1) values (seeded), made by the backend from an F32 table of those rows. */
    static Activation gaussian(Backend backend, Arena arena, int tokens, int width, long seed) {
        MemorySegment data = arena.allocate((long) tokens * width * Float.BYTES, 64);
        var random = new SplittableRandom(seed);
        for (long i = 0; i < (long) tokens * width; i++) {
            data.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextGaussian());
        }
        Weight table = backend.weight(new GgmlTensor("bench.rows", GgmlType.F32, new long[] {width, tokens}, data));
        int[] ids = new int[tokens];
        for (int i = 0; i < tokens; i++) ids[i] = i;
        return backend.ops().embed(table, ids);
    }
}
