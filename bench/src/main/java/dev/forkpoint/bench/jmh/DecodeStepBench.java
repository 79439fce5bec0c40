package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.model.Architecture;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.model.ModelFiles;
import org.openjdk.jmh.annotations.*;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One whole decode step of a model on the CPU backend, as the engine takes it ({@code runStep}: begin, forward, the
 * last row's logits, rollback so that every call sees the same {@code context} positions). With {@code -prof gc},
 * {@code gc.alloc.rate.norm} is the heap the decode loop allocates per token: the activations are reused from step
 * to step, so what remains is the kernels' per-call scratch and the step's small bookkeeping.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class DecodeStepBench {
    /** A GGUF file or model folder (`bench generate --shape llama-3.2-1b --type q4_0` writes a 1B one). */
    @Param({"../shared/models/stories260K.gguf"})
    public String model;

    /** Positions already in the KV store when the step runs. */
    @Param({"256"})
    public int context;

    @Param({"2"})
    public int threads;

    @Param({"native", "java"})
    public String kernels;

    private CpuBackend backend;
    private ModelFiles files;
    private Architecture arch;
    private PagePool pool;
    private SequenceKv sequence;
    private KvStore store;

    @Setup
    public void setUp() throws IOException {
        backend = new CpuBackend(threads, KernelChoice.parse(kernels));
        files = ModelFiles.open(Path.of(model));
        arch = files.load(backend, n -> {});
        ModelConfig c = arch.config();
        KvLayout layout = KvLayout.of(c.kvLayers(), c.kvDim(), KvElementType.F32);
        pool = new PagePool(layout, layout.budgetFor(context + 1, 1));
        sequence = pool.newSequence();
        store = backend.newKvStore(sequence);
        int[] prompt = new int[context];
        for (int i = 0; i < context; i++) prompt[i] = 3 + i % Math.min(250, c.vocabSize() - 3);
        backend.runStep(() -> {
            store.begin(context);
            arch.forward(backend.ops(), List.of(new Segment(prompt, 0, store)));
            store.prepareCommit();
            store.commit();
            return null;
        });
    }

    @TearDown
    public void tearDown() throws IOException {
        sequence.close();
        pool.close();
        backend.close();
        files.close();
    }

    @Benchmark
    public float[] step() {
        return backend.runStep(() -> {
            Ops ops = backend.ops();
            store.begin(1);
            try {
                Activation hidden = arch.forward(ops, List.of(new Segment(new int[] {42}, context, store)));
                return ops.logits(hidden, arch.output())[0];
            } finally {
                store.rollback();
            }
        });
    }
}
