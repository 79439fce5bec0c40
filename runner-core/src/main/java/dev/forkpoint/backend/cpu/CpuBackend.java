package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.HostMatrix;
import dev.forkpoint.tensor.Quantization;
import dev.forkpoint.tensor.WeightSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.function.Supplier;

/** The pure-Java backend: Vector API kernels on a fixed pool of threads, weights read in place from the mapping. */
public final class CpuBackend implements Backend {
    private final WorkerPool pool;
    private final CpuOps ops;
    private final StepBuffers buffers = new StepBuffers(StepBuffers.DEFAULT_LIMIT_BYTES);
    private final NativeKernels nativeKernels;   // null: the Java kernels only
    private volatile int invariantRows = Integer.MAX_VALUE;   // the least of the matrices made so far

    /** A backend with {@code threads} threads on the Java kernels. */
    public CpuBackend(int threads) {
        this(threads, KernelChoice.JAVA);
    }

    /**
     * A backend with {@code threads} threads whose matrices (Q8_0, Q4_0, Q4_K, Q6_K, F32, F16, BF16, MLX affine 4 and 8
     * bits) multiply on the
     * kernels {@code kernels} selects: {@code native} refuses (naming --kernels) when no C compiler built them,
     * {@code auto} falls back to Java (said once).
     */
    public CpuBackend(int threads, KernelChoice kernels) {
        this.nativeKernels = NativeKernels.forChoice(kernels).orElse(null);
        this.pool = new WorkerPool(threads);
        this.ops = new CpuOps(pool, buffers, nativeKernels);
    }

    /** The kernels in use: "java", or "native VARIANT" (avx512vnni, avx2, neon, c). */
    public String kernelsInUse() {
        return nativeKernels == null ? "java" : "native " + nativeKernels.variant().suffix;
    }

    public String name() { return "cpu"; }

    public int threads() { return pool.threads(); }

    public Weight weight(WeightSource source) {
        return switch (source) {
            case GgmlTensor t -> ggml(t);
            case AffineTensor t -> affine(t);
            case FpTensor t -> fp(t);
            case HostMatrix h -> host(h.name(), h.values(), h.rows(), h.cols());
        };
    }

    private Weight ggml(GgmlTensor t) {
        if (t.shape().length == 1) {
            return new CpuWeight(t.name(), t.type().name(), 1, t.rowLength(), null, vectorValues(t));
        }
        return matrix(t.name(), t.type().name(), PackedMatrix.of(t, nativeKernels), null);
    }

    private Weight affine(AffineTensor t) {
        AffineMatrix m = new AffineMatrix(t, nativeKernels);
        return matrix(t.name(), m.typeName(), m, null);
    }

    private Weight fp(FpTensor t) {
        FpMatrix m = new FpMatrix(t);
        return matrix(t.name(), m.typeName(), m, null);
    }

    private Weight matrix(String name, String type, PackedMatrix m, float[] vector) {
        invariantRows = Math.min(invariantRows, m.invariantTokens());
        return new CpuWeight(name, type, m.rows(), m.cols(), m, vector);
    }

    /**
     * The least {@link PackedMatrix#invariantTokens()} of the matrices made so far: any number of rows when every
     * matrix multiplies on the native kernels, the Java decode kernels' 16 otherwise.
     */
    @Override
    public int invariantRows() {
        return invariantRows;
    }

    private static float[] vectorValues(GgmlTensor t) {
        float[] v = new float[t.rowLength()];
        if (t.type() == GgmlType.F32) {
            MemorySegment.copy(t.data(), ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, v, 0, v.length);
        } else {
            Quantization.dequantize(t.type(), t.data(), 0, v, 0, v.length);
        }
        return v;
    }

    public KvStore newKvStore(SequenceKv sequence, RecurrentLayout recurrent) {
        return new CpuKvStore(sequence, recurrent);
    }

    private Weight host(String name, float[] values, int rows, int cols) {
        if (values.length != (long) rows * cols) throw new IllegalArgumentException(name + ": " + values.length + " values for " + rows + "×" + cols);
        float[] copy = values.clone();
        if (rows == 1) {   // one row: a vector and a 1-row matrix (multiplied by nothing the scheduler batches)
            return new CpuWeight(name, "F32", rows, cols, new F32Matrix(MemorySegment.ofArray(copy), rows, cols, nativeKernels), copy);
        }
        return matrix(name, "F32", new F32Matrix(MemorySegment.ofArray(copy), rows, cols, nativeKernels), null);
    }

    public Ops ops() { return ops; }

    /**
     * Runs the step on the calling thread with the ops' activation arrays reused from the previous step
     * ({@link StepBuffers}): a decode loop allocates no activations after its first step. A step that overlaps another
     * (on another thread) allocates its own, as ops called outside a step do.
     */
    @Override
    public <T> T runStep(Supplier<T> step) {
        if (!buffers.open()) return step.get();
        try {
            return step.get();
        } finally {
            buffers.close();
        }
    }

    /** The step arrays this backend reuses (for tests). */
    StepBuffers stepBuffers() { return buffers; }

    /** What the kernels run with here, for {@code forkpoint doctor}: "Java Vector API, 512-bit float vectors (16 lanes)". */
    public static String kernels() {
        return "Java Vector API, " + KernelSupport.F.vectorBitSize() + "-bit float vectors (" + KernelSupport.L + " lanes)";
    }

    /**
     * What {@code --kernels auto} gets here, for {@code forkpoint doctor}: "native avx512vnni (variants this CPU runs:
     * avx512vnni, avx2, c; built with /usr/bin/cc into PATH)", or "java only: REASON". Builds the library when it is not
     * built yet.
     */
    public static String nativeKernelsStatus() {
        Object library = NativeKernels.library(System.getenv());
        if (library instanceof NativeKernels.Library l) {
            return "native " + l.runnable().getFirst().suffix + " (variants this CPU runs: "
                    + String.join(", ", l.runnable().stream().map(v -> v.suffix).toList()) + "; built with " + l.compiler()
                    + " into " + l.path() + ")";
        }
        return "java only: " + library;
    }

    /**
     * Weight bytes read by the CPU mixture-of-experts blocks of this JVM so far (router rows plus the chosen experts'
     * gate, up and down rows, each at its type's bytes per row): a benchmark's check that decode reads only the
     * chosen experts. Summed over every backend instance and thread.
     */
    public static long moeWeightBytesRead() { return CpuMoe.weightBytesRead(); }

    public void close() { pool.close(); }
}
