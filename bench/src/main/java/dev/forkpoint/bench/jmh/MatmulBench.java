package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.cpu.PackedMatrix;
import dev.forkpoint.backend.cpu.WorkerPool;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.openjdk.jmh.annotations.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The CPU matrix kernels on Llama-3.2-1B-sized matrices: decode (tokens = 1, a matrix–vector product; read the score
 * as weight bandwidth, GB/s = matrix bytes printed at setup / time) and prefill (tokens = 512; GFLOP/s =
 * 2·rows·cols·tokens / time). Weights are seeded Gaussian values quantised with {@link Quantization}, held off-heap
 * like a mapped GGUF file.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0"})
public class MatmulBench {
    @Param({"Q8_0", "Q4_0", "Q4_K", "Q6_K", "F16", "BF16", "F32"})
    public String type;

    /** rows × cols: 2048×8192 is ffn_down, 8192×2048 ffn_gate/ffn_up of Llama-3.2-1B. */
    @Param({"2048x8192", "8192x2048"})
    public String shape;

    @Param({"1", "512"})
    public int tokens;

    @Param({"1", "2"})
    public int threads;

    private Arena arena;
    private WorkerPool pool;
    private PackedMatrix matrix;
    private float[] x;
    private float[] out;

    @Setup
    public void setUp() {
        GgmlType t = GgmlType.parse(type);
        String[] dims = shape.split("x");
        int rows = Integer.parseInt(dims[0]), cols = Integer.parseInt(dims[1]);
        arena = Arena.ofShared();
        MemorySegment seg = arena.allocate(t.bytesFor((long) rows * cols), 64);
        Random rnd = new Random(1);
        float[] row = new float[cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) row[c] = (float) (rnd.nextGaussian() * 0.02);
            Quantization.quantize(t, row, 0, cols, seg, t.bytesFor((long) r * cols));
        }
        matrix = PackedMatrix.of(new GgufTensor("bench.weight", t, new long[] {cols, rows}, 0, seg));
        x = new float[tokens * cols];
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        out = new float[tokens * rows];
        pool = new WorkerPool(threads);
        System.out.printf("%n[%s %s] matrix bytes: %d, flops per call: %d%n", type, shape, seg.byteSize(), 2L * rows * cols * tokens);
    }

    @TearDown
    public void tearDown() {
        pool.close();
        arena.close();
    }

    @Benchmark
    public float[] multiply() {
        matrix.multiply(x, tokens, out, pool);
        return out;
    }
}
