package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import org.openjdk.jmh.annotations.*;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * One decode step of attention for one layer of Llama-3.2-1B (32 query heads, 8 KV heads of 64) through the CPU
 * backend's attention op, against a KV store already holding {@code context} positions in paged storage
 * ({@link PagePool}, {@link SequenceKv}): the op writes the new token's K/V and reads every stored position's. The
 * step is rolled back after each call, so every call sees the same store. {@code bench jmh} prints the KV bytes
 * read per second (K and V of context + 1 positions) and GFLOP/s (4·heads·headDim per position) beside the score,
 * and after them this machine's read bandwidth at each thread count measured ({@code MachineInfo.readBandwidth}) with
 * the KV rate as a share of it. {@code kernels} chooses the attention kernel as {@code --kernels} does: {@code java}
 * ({@code CpuAttention}'s Vector API code), {@code native} (forkpoint_attention.c), {@code auto}. {@code streams}
 * > 1: that many decode rows of sequences forked from the one holding the context (a shared prefix's pages, read once
 * per step for all of them).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0"})
public class AttentionBench {
    static final int HEADS = 32, KV_HEADS = 8, HEAD_DIM = 64;

    /** Positions already in the KV store. */
    @Param({"1024", "8192", "32768"})
    public int context;

    /** KV element type (the engine's default is F32; Q8_0 and Q4_0 are quantised, dequantised as they are read). */
    @Param({"F32", "F16", "Q8_0", "Q4_0"})
    public String kv;

    @Param({"1", "2"})
    public int threads;

    @Param({"native"})
    public String kernels;

    /**
     * Decode rows in the step, one per sequence: with more than one, each sequence is a fork of the one holding the
     * {@code context} positions (the prefix cache's shared pages), so the rows read the same stored K/V.
     */
    @Param({"1"})
    public int streams;

    private CpuBackend backend;
    private Arena arena;
    private PagePool pool;
    private SequenceKv sequence;
    private final java.util.List<SequenceKv> forks = new java.util.ArrayList<>();
    private KvStore[] stores;
    private Activation q, k, v;
    private List<Segment> step;

    @Setup
    public void setUp() {
        backend = new CpuBackend(threads, dev.forkpoint.backend.KernelChoice.parse(kernels));
        arena = Arena.ofShared();
        int kvDim = KV_HEADS * HEAD_DIM;
        KvLayout layout = KvLayout.of(1, kvDim, KvElementType.valueOf(kv));
        pool = new PagePool(layout, layout.budgetFor(context + 1, streams + 1));
        sequence = pool.newSequence();
        sequence.begin(context);
        var random = new SplittableRandom(7);
        float[] entry = new float[kvDim];
        for (int p = 0; p < context; p++) {
            for (KvKind kind : KvKind.values()) {
                for (int i = 0; i < kvDim; i++) entry[i] = (float) random.nextGaussian();
                sequence.write(p, 0, kind, entry);
            }
        }
        sequence.commit();
        stores = new KvStore[streams];
        List<Segment> segments = new java.util.ArrayList<>();
        for (int s = 0; s < streams; s++) {
            SequenceKv own = sequence;
            if (streams > 1) forks.add(own = sequence.fork());
            stores[s] = backend.newKvStore(own);
            segments.add(new Segment(new int[1], context, stores[s]));
        }
        q = CpuFixtures.gaussian(backend, arena, streams, HEADS * HEAD_DIM, 1);
        k = CpuFixtures.gaussian(backend, arena, streams, kvDim, 2);
        v = CpuFixtures.gaussian(backend, arena, streams, kvDim, 3);
        step = List.copyOf(segments);
    }

    @TearDown
    public void tearDown() {
        for (SequenceKv f : forks) f.close();
        sequence.close();
        pool.close();
        backend.close();
        arena.close();
    }

    @Benchmark
    public Activation decode() {
        for (KvStore store : stores) store.begin(1);
        try {
            return backend.ops().attention(q, k, v, step, 0, HEADS, KV_HEADS, HEAD_DIM);
        } finally {
            for (KvStore store : stores) store.rollback();
        }
    }
}
