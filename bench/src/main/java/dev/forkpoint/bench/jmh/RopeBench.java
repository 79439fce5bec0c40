package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.cpu.CpuBackend;
import org.openjdk.jmh.annotations.*;

import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;

/**
 * RoPE through the CPU backend's op on Llama-3.2-1B's query projection (32 heads of 64, base 500,000, Llama 3
 * frequency factors): one decode token at a late position, or a 512-token prefill chunk.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0"})
public class RopeBench {
    static final int HEADS = 32, HEAD_DIM = 64;

    @Param({"1", "512"})
    public int tokens;

    private CpuBackend backend;
    private Arena arena;
    private Activation x;
    private int[] positions;
    private Rope rope;

    @Setup
    public void setUp() {
        backend = new CpuBackend(1);
        arena = Arena.ofShared();
        x = CpuFixtures.gaussian(backend, arena, tokens, HEADS * HEAD_DIM, 11);
        positions = new int[tokens];
        for (int i = 0; i < tokens; i++) positions[i] = 4000 + i;
        rope = new Rope(HEAD_DIM, 500_000, false, dev.forkpoint.format.Llama3RopeFactors.of(HEAD_DIM, 500_000, 32, 1, 4, 8192));
    }

    @TearDown
    public void tearDown() {
        backend.close();
        arena.close();
    }

    @Benchmark
    public Activation rope() {
        return backend.ops().rope(x, HEAD_DIM, positions, rope);
    }
}
