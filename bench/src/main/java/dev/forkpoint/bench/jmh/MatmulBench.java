package dev.forkpoint.bench.jmh;

import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.backend.cpu.PackedMatrix;
import dev.forkpoint.backend.cpu.WorkerPool;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpCodec;
import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;
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
 * like a mapped GGUF file. {@code MLX<bits>_G<group>} (e.g. MLX4_G64, MLX8_G64, MLX3_G32) is an MLX affine-quantised
 * matrix with BF16 scales and biases (as mlx-community models of BF16 originals store them), quantised with
 * {@link AffineCodec}; {@code MXFP4}, {@code NVFP4} and {@code MXFP8} are MLX's floating-point modes, quantised with
 * {@link FpCodec} (MLX's rule). {@code kernels} chooses the CPU kernels of the GGML types as {@code --kernels} does
 * ({@code java}, {@code native}, {@code auto}; the native C kernels cover Q8_0, Q4_0, Q4_K, Q6_K, F16, BF16, F32 and MLX affine 4 and 8 bits),
 * e.g. {@code -p kernels=java,native}; {@code -p shape=2048x2048} is a square attention-sized matrix.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "-Djdk.incubator.vector.VECTOR_ACCESS_OOB_CHECK=0"})
public class MatmulBench {
    @Param({"Q8_0", "Q4_0", "Q4_K", "Q6_K", "F16", "BF16", "F32", "MLX4_G64", "MLX8_G64", "MXFP4", "NVFP4", "MXFP8"})
    public String type;

    /** rows × cols: 2048×8192 is ffn_down, 8192×2048 ffn_gate/ffn_up of Llama-3.2-1B. */
    @Param({"2048x8192", "8192x2048"})
    public String shape;

    @Param({"1", "512"})
    public int tokens;

    @Param({"1", "2"})
    public int threads;

    @Param({"java"})
    public String kernels;

    private Arena arena;
    private WorkerPool pool;
    private PackedMatrix matrix;
    private float[] x;
    private float[] out;

    @Setup
    public void setUp() {
        String[] dims = shape.split("x");
        int rows = Integer.parseInt(dims[0]), cols = Integer.parseInt(dims[1]);
        arena = Arena.ofShared();
        pool = new WorkerPool(threads);
        x = new float[tokens * cols];
        out = new float[tokens * rows];
        if (type.startsWith("MLX")) {
            setUpAffine(rows, cols);
            return;
        }
        if (type.endsWith("FP4") || type.endsWith("FP8")) {
            setUpFp(rows, cols);
            return;
        }
        GgmlType t = GgmlType.parse(type);
        MemorySegment seg = arena.allocate(t.bytesFor((long) rows * cols), 64);
        Random rnd = new Random(1);
        float[] row = new float[cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) row[c] = (float) (rnd.nextGaussian() * 0.02);
            Quantization.quantize(t, row, 0, cols, seg, t.bytesFor((long) r * cols));
        }
        matrix = PackedMatrix.of(new GgmlTensor("bench.weight", t, new long[] {cols, rows}, seg), KernelChoice.parse(kernels));
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        System.out.printf("%n[%s %s] matrix bytes: %d, flops per call: %d%n", type, shape, seg.byteSize(), 2L * rows * cols * tokens);
    }

    private void setUpAffine(int rows, int cols) {
        String[] p = type.substring(3).split("_G");
        AffineFormat f = new AffineFormat(Integer.parseInt(p[0]), Integer.parseInt(p[1]));
        Random rnd = new Random(1);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.02);
        AffineTensor t = AffineCodec.quantize(w, rows, cols, f, GgmlType.BF16).toTensor("bench.weight", GgmlType.BF16, arena);
        matrix = PackedMatrix.of(t, KernelChoice.parse(kernels));
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        long bytes = t.packed().byteSize() + t.scales().byteSize() + t.biases().byteSize();
        System.out.printf("%n[%s %s] matrix bytes: %d, flops per call: %d%n", type, shape, bytes, 2L * rows * cols * tokens);
    }

    private void setUpFp(int rows, int cols) {
        FpFormat f = FpFormat.valueOf(type);
        Random rnd = new Random(1);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.02);
        FpTensor t = FpCodec.quantize(w, rows, cols, f).toTensor("bench.weight", arena);
        matrix = PackedMatrix.of(t);
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        long bytes = t.packed().byteSize() + t.scales().byteSize();
        System.out.printf("%n[%s %s] matrix bytes: %d, flops per call: %d%n", type, shape, bytes, 2L * rows * cols * tokens);
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
