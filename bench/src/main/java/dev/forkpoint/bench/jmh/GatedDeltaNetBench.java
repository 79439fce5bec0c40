package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.tensor.HostMatrix;
import org.openjdk.jmh.annotations.*;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Prefill of one Gated DeltaNet layer's delta rule through the CPU backend's op, for a Qwen3.5-35B-A3B-like shape
 * (16 key heads, 32 value heads, 128 × 128 state per head): one segment of {@code tokens} tokens from a fresh state,
 * rolled back after each call. The two benchmarks run the same op in its two forms, chosen by the backend's property
 * {@code forkpoint.gdn.chunkedFrom} (chunked: every segment; recurrent: none), each in its own fork. Tokens per
 * second = tokens / (ms per call) · 1000.
 *
 * <p>{@code ./forkpoint bench jmh GatedDeltaNetBench} (add {@code -p tokens=16,32,64} to find where chunking pays).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 3, time = 1)
public class GatedDeltaNetBench {
    static final int KEY_HEADS = 16, VALUE_HEADS = 32, KEY_DIM = 128, VALUE_DIM = 128;
    static final String VECTOR = "--add-modules=jdk.incubator.vector";
    static final String NO_OOB = "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0";

    @Param({"512"})
    public int tokens;

    @Param({"1"})
    public int threads;

    private CpuBackend backend;
    private Arena arena;
    private PagePool pool;
    private SequenceKv sequence;
    private KvStore store;
    private Activation q, k, v, a, b;
    private Weight aLog, dtBias;
    private List<Segment> step;

    @Setup
    public void setUp() {
        backend = new CpuBackend(threads);
        arena = Arena.ofShared();
        KvLayout layout = KvLayout.of(1, 8, KvElementType.F32);
        pool = new PagePool(layout, layout.budgetFor(tokens, 1));
        sequence = pool.newSequence();
        store = backend.newKvStore(sequence, new RecurrentLayout(1, 2 * KEY_HEADS * KEY_DIM + VALUE_HEADS * VALUE_DIM, 4,
                VALUE_HEADS, KEY_DIM, VALUE_DIM));
        var ops = backend.ops();
        q = ops.l2NormHeads(CpuFixtures.gaussian(backend, arena, tokens, KEY_HEADS * KEY_DIM, 1), KEY_DIM, 1e-6f, (float) (1 / Math.sqrt(KEY_DIM)));
        k = ops.l2NormHeads(CpuFixtures.gaussian(backend, arena, tokens, KEY_HEADS * KEY_DIM, 2), KEY_DIM, 1e-6f, 1f);
        v = CpuFixtures.gaussian(backend, arena, tokens, VALUE_HEADS * VALUE_DIM, 3);
        a = CpuFixtures.gaussian(backend, arena, tokens, VALUE_HEADS, 4);
        b = CpuFixtures.gaussian(backend, arena, tokens, VALUE_HEADS, 5);
        var random = new SplittableRandom(6);
        float[] al = new float[VALUE_HEADS], dt = new float[VALUE_HEADS];
        for (int h = 0; h < VALUE_HEADS; h++) {
            al[h] = (float) Math.log(1 + 15 * random.nextDouble());
            dt[h] = (float) (0.1 * random.nextGaussian());
        }
        aLog = backend.weight(new HostMatrix("A_log", al, 1, VALUE_HEADS));
        dtBias = backend.weight(new HostMatrix("dt_bias", dt, 1, VALUE_HEADS));
        step = List.of(new Segment(new int[tokens], 0, store));
    }

    @TearDown
    public void tearDown() {
        sequence.close();
        pool.close();
        backend.close();
        arena.close();
    }

    private Activation prefill() {
        store.begin(tokens);
        try {
            return backend.ops().gatedDeltaRule(q, k, v, a, b, aLog, dtBias, step, 0, KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM);
        } finally {
            store.rollback();
        }
    }

    @Benchmark
    @Fork(value = 1, jvmArgsAppend = {VECTOR, NO_OOB, "-Dforkpoint.gdn.chunkedFrom=1"})
    public Activation chunked() {
        return prefill();
    }

    @Benchmark
    @Fork(value = 1, jvmArgsAppend = {VECTOR, NO_OOB, "-Dforkpoint.gdn.chunkedFrom=2147483647"})
    public Activation recurrent() {
        return prefill();
    }
}
