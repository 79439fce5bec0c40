package dev.forkpoint.metal;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxArray;
import dev.forkpoint.metal.mlxc.MlxC;
import dev.forkpoint.metal.mlxc.MlxSession;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpCodec;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.HostMatrix;
import dev.forkpoint.tensor.Quantization;
import dev.forkpoint.tensor.WeightSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * The backend on MLX arrays through MLX-C (issue 14, deliverable 3): the dense architectures (llama, qwen2, qwen3) and
 * the hybrids (qwen35, qwen35moe, qwen3next, qwen3moe: Gated DeltaNet, gated attention, mixtures of experts). The ops
 * build a lazy MLX graph, float32 activations, evaluated once, when logits are read (the mixture also evaluates its
 * router's logits to route on the host). Each sequence's keys and values live in MLX arrays beside the kv-cache pages
 * ({@link MlxKvArrays}, see {@link MlxKvStore}); a hybrid's recurrent state in MLX arrays too
 * ({@link MlxRecurrentState}); both written by a step and committed or dropped with it. Every MLX call runs on one
 * thread this backend owns (MLX's streams are thread-local): {@link #runStep} runs a whole engine step there; an op
 * called from any other thread is run there and waited for. Weights: F32/F16/BF16 matrices uploaded as stored; Q8_0 and Q4_0
 * converted exactly to MLX affine 8/4-bit, group 32 (scale d, bias −128·d / −8·d) and multiplied with
 * {@code mlx_quantized_matmul}; MLX affine matrices used as stored; other GGML types and MLX's mxfp4/nvfp4/mxfp8
 * dequantised to float32 on the host; vectors float32.
 */
public final class MlxBackend implements Backend {
    /** The architectures (GGUF names) whose ops this backend implements. */
    public static final List<String> ARCHITECTURES = List.of("llama", "qwen2", "qwen3", "qwen35", "qwen35moe", "qwen3next", "qwen3moe");

    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Mlx mlx;
    private final ExecutorService executor;
    private final Thread thread;
    private final MlxSession session;
    private final MlxOps ops;
    private final List<MlxWeight> weights = new ArrayList<>();
    private final List<MlxRecurrentState> states = new ArrayList<>();   // the stores' recurrent states (MLX thread only)
    private final List<MlxKvArrays> kvArrays = new ArrayList<>();      // the stores' keys and values (MLX thread only)
    private MetalSdpaDecode decodeKernel;   // on a Metal GPU: Forkpoint's SDPA decode kernel; null = MLX's SDPA (MLX thread only)
    private volatile boolean closed;
    private long hops, threadNanos;   // work handed to the MLX thread, and its time there (MLX thread only)

    /** A backend on {@code mlx}, with its own MLX thread and session. */
    public MlxBackend(Mlx mlx) {
        this.mlx = mlx;
        Thread[] made = new Thread[1];
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "forkpoint-mlx");
            t.setDaemon(true);
            made[0] = t;
            return t;
        });
        MlxSession s;
        try {
            s = submit(mlx::openSession);
        } catch (RuntimeException | Error e) {
            executor.shutdown();
            throw e;
        }
        this.thread = made[0];
        this.session = s;
        this.ops = new MlxOps(this);
        this.decodeKernel = submit(() -> session.onMetalGpu()
                ? new MetalSdpaDecode(session, dev.forkpoint.metal.objc.MetalPipelineCompiler.open().compiler()) : null);
    }

    /** Loads MLX-C ({@code --mlx-lib} value, {@code FORKPOINT_MLXC_LIB}, Homebrew, Ollama, loader) and makes a backend on it. */
    public static MlxBackend open(Optional<String> mlxLibOption) {
        return new MlxBackend(Mlx.load(mlxLibOption));
    }

    public String name() { return "mlx"; }

    public Mlx mlx() { return mlx; }

    public void checkArchitecture(String architecture) {
        if (!ARCHITECTURES.contains(architecture)) {
            throw new InvalidInputException("architecture " + architecture + ": the MLX backend runs "
                    + String.join(", ", ARCHITECTURES) + "; use --backend cpu");
        }
    }

    /** The MLX attention reads F32 or F16 KV only: quantised KV (q8_0, q4_0) is refused, naming the type. */
    @Override
    public void checkKvType(KvElementType type) {
        if (type.quantised()) {
            throw new InvalidInputException("kv_type " + type.lowerName() + " is not supported on the MLX backend (its attention reads f16 or f32 KV);"
                    + " use --kv-type f16, or --backend cpu");
        }
    }

    public Weight weight(WeightSource source) {
        try (Arena copies = Arena.ofShared()) {
            WeightSource readable = readableOnMlxThread(source, copies);
            return call(() -> {
                MlxWeight w = upload(readable);
                weights.add(w);
                return w;
            });
        }
    }

    /**
     * The source with any segment the MLX thread may not read (one confined to the calling thread) copied, on this
     * thread, into {@code copies}; mapped files and shared segments are read in place.
     */
    private WeightSource readableOnMlxThread(WeightSource source, Arena copies) {
        return switch (source) {
            case GgmlTensor t -> new GgmlTensor(t.name(), t.type(), t.shape(), readable(t.data(), copies));
            case AffineTensor t -> new AffineTensor(t.name(), t.rows(), t.cols(), t.format(), readable(t.packed(), copies),
                    t.scaleType(), readable(t.scales(), copies), readable(t.biases(), copies));
            case FpTensor t -> new FpTensor(t.name(), t.rows(), t.cols(), t.format(), readable(t.packed(), copies),
                    readable(t.scales(), copies));
            case HostMatrix h -> h;
        };
    }

    private MemorySegment readable(MemorySegment segment, Arena copies) {
        if (segment.isAccessibleBy(thread)) return segment;
        MemorySegment copy = copies.allocate(segment.byteSize(), 16);
        MemorySegment.copy(segment, 0, copy, 0, segment.byteSize());
        return copy;
    }

    /**
     * A store over {@code sequence}; with {@code recurrent}, it also keeps that recurrent state as MLX arrays, freed
     * when the sequence is closed (at the next step begun on any of this backend's stores) or when the backend closes.
     */
    public KvStore newKvStore(SequenceKv sequence, RecurrentLayout recurrent) {
        if (sequence == null) throw new IllegalArgumentException("kv store: sequence is missing");
        checkKvType(sequence.layout().elementType());
        MlxKvArrays arrays = new MlxKvArrays(sequence);
        MlxRecurrentState state = recurrent == null ? null : new MlxRecurrentState(recurrent, sequence);
        call(() -> {
            sweepStates();
            kvArrays.add(arrays);
            if (state != null) states.add(state);
            return null;
        });
        return new MlxKvStore(sequence, this, arrays, state);
    }

    public Ops ops() { return ops; }

    /**
     * Runs the whole step on the MLX thread: its ops and store calls then run there directly, one hand-off per step
     * instead of one per op.
     */
    public <T> T runStep(Supplier<T> step) {
        return call(step);
    }

    /**
     * Arrays this backend's MLX session holds now: the weights', the current pass's activations and the recurrent
     * states and KV arrays of the sequences still open (those of closed ones are freed first).
     */
    public int liveArrays() {
        return call(() -> {
            sweepStates();
            return session.liveArrays();
        });
    }

    /**
     * Frees the arrays of the current forward pass: done when its logits are read and when a step begins or rolls back
     * on one of this backend's stores; an activation used after that is refused.
     */
    public void releaseActivations() {
        if (closed) return;
        call(() -> {
            try {
                ops.releasePass();
            } finally {
                sweepStates();
            }
            return null;
        });
    }

    /** Frees the recurrent state and the KV arrays of every store whose sequence has been closed (on the MLX thread). */
    void sweepStates() {
        RuntimeException first = null;
        for (var it = kvArrays.iterator(); it.hasNext(); ) {
            MlxKvArrays kv = it.next();
            if (!kv.sequence().isClosed()) continue;
            it.remove();
            try {
                kv.free();
            } catch (RuntimeException e) {
                first = e;
            }
        }
        for (var it = states.iterator(); it.hasNext(); ) {
            MlxRecurrentState st = it.next();
            if (!st.sequence().isClosed()) continue;
            it.remove();
            try {
                st.free();
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
        }
        if (first != null) throw first;
    }

    /** Frees every weight and activation, closes the MLX session and stops the MLX thread. */
    public void close() {
        if (closed) return;
        closed = true;
        try {
            submit(() -> {
                try {
                    ops.releasePass();
                    if (decodeKernel != null) decodeKernel.close();
                    for (MlxRecurrentState st : states) st.free();
                    states.clear();
                    for (MlxKvArrays kv : kvArrays) kv.free();
                    kvArrays.clear();
                    for (MlxWeight w : weights) w.free();
                    weights.clear();
                } finally {
                    session.close();
                }
                return null;
            });
        } finally {
            executor.shutdown();
        }
    }

    // ---- the MLX thread ----

    MlxSession session() { return session; }

    /** Forkpoint's SDPA decode kernel on this backend's Metal GPU, or null: MLX's SDPA (not a Metal GPU, or it failed). */
    MetalSdpaDecode decodeKernel() { return decodeKernel; }

    /** After the decode kernel failed other than by a thread limit: MLX's SDPA from now on, said once. */
    void decodeKernelFailed(RuntimeException e) {
        if (decodeKernel == null) return;
        System.getLogger(MlxBackend.class.getName()).log(System.Logger.Level.WARNING,
                "Forkpoint's Metal SDPA decode kernel failed ({0}); attention runs on MLX''s SDPA from now on", e.getMessage());
        decodeKernel.close();
        decodeKernel = null;
    }

    /** Runs {@code work} on the MLX thread (directly when already on it) and returns its result or rethrows its failure. */
    <T> T call(Supplier<T> work) {
        if (Thread.currentThread() == thread) return work.get();
        if (closed) throw new IllegalStateException("the MLX backend is closed");
        return submit(work);
    }

    /** What this backend's MLX thread has done so far (one hop to it to read them). */
    public MlxTimings timings() {
        return call(() -> new MlxTimings(hops, threadNanos, session.evalNanos()));
    }

    private <T> T submit(Supplier<T> work) {
        Future<T> future = executor.submit(() -> {
            long started = System.nanoTime();
            try {
                return work.get();
            } finally {
                hops++;
                threadNanos += System.nanoTime() - started;
            }
        });
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return future.get();   // the MLX thread finishes the op whatever happens here
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof RuntimeException r) throw r;
                    if (cause instanceof Error err) throw err;
                    throw new IllegalStateException(cause);
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    // ---- weights (on the MLX thread) ----

    private MlxWeight upload(WeightSource source) {
        return switch (source) {
            case GgmlTensor t -> ggml(t);
            case AffineTensor t -> affine(t);
            case FpTensor t -> fp(t);
            case HostMatrix h -> host(h);
        };
    }

    private MlxWeight ggml(GgmlTensor t) {
        String name = t.name();
        GgmlType type = t.type();
        long needed;
        try {
            needed = type.bytesFor(t.elementCount());
        } catch (IllegalArgumentException e) {
            throw new InvalidInputException("tensor " + name + " " + t.shapeString() + " of " + type + ": " + e.getMessage());
        }
        if (t.data().byteSize() < needed) {
            throw new InvalidInputException("tensor " + name + " " + t.shapeString() + " of " + type + " needs " + needed
                    + " bytes, has " + t.data().byteSize());
        }
        MemorySegment data = t.data().asSlice(0, needed);
        int cols = t.rowLength();
        if (t.shape().length == 1) {
            return MlxWeight.vector(name, type.name(), cols, session.fromFloats(dequantize(t, data, 1, cols), cols));
        }
        int rows = t.rows();
        return switch (type) {
            case F32 -> MlxWeight.dense(name, type.name(), rows, cols, session.fromData(data, MlxC.MLX_FLOAT32, rows, cols));
            case F16 -> MlxWeight.dense(name, type.name(), rows, cols, session.fromData(data, MlxC.MLX_FLOAT16, rows, cols));
            case BF16 -> MlxWeight.dense(name, type.name(), rows, cols, session.fromData(data, MlxC.MLX_BFLOAT16, rows, cols));
            case Q8_0, Q4_0 -> ggmlAffine(t, data, rows, cols);
            default -> MlxWeight.dense(name, type.name(), rows, cols, session.fromFloats(dequantize(t, data, rows, cols), rows, cols));
        };
    }

    private static float[] dequantize(GgmlTensor t, MemorySegment data, int rows, int cols) {
        float[] out = new float[Math.multiplyExact(rows, cols)];
        try {
            Quantization.dequantize(t.type(), data, 0, out, 0, out.length);
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            throw new InvalidInputException("tensor " + t.name() + " " + t.shapeString() + ": " + e.getMessage());
        }
        return out;
    }

    /**
     * Q8_0 / Q4_0 as MLX affine 8 / 4-bit codes, group 32, exactly: a Q8_0 block (f16 d, 32 int8 q: d·q) becomes codes
     * q + 128, scale d, bias −128·d; a Q4_0 block (f16 d, 16 bytes: element j &lt; 16 the low nibble of byte j, element
     * j + 16 its high nibble; d·(n − 8)) becomes codes n (packed two to a byte in element order), scale d, bias −8·d.
     * Scales and biases are float32 (both exact).
     */
    private MlxWeight ggmlAffine(GgmlTensor t, MemorySegment data, int rows, int cols) {
        boolean q8 = t.type() == GgmlType.Q8_0;
        int bits = q8 ? 8 : 4;
        int blocks = cols / 32;
        int blockBytes = t.type().blockBytes();
        long groups = (long) rows * blocks;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment codes = arena.allocate(groups * 32 * bits / 8, 4);
            MemorySegment scales = arena.allocate(groups * 4, 4);
            MemorySegment biases = arena.allocate(groups * 4, 4);
            for (long g = 0; g < groups; g++) {
                long in = g * blockBytes;
                float d = Float.float16ToFloat(data.get(I16, in));
                scales.set(F32, 4 * g, d);
                if (q8) {
                    biases.set(F32, 4 * g, -128f * d);
                    long out = g * 32;
                    for (int j = 0; j < 32; j++) {
                        codes.set(ValueLayout.JAVA_BYTE, out + j, (byte) (data.get(ValueLayout.JAVA_BYTE, in + 2 + j) ^ 0x80));
                    }
                } else {
                    biases.set(F32, 4 * g, -8f * d);
                    long out = g * 16;
                    for (int k = 0; k < 16; k++) {
                        int lo = nibble(data, in, 2 * k), hi = nibble(data, in, 2 * k + 1);
                        codes.set(ValueLayout.JAVA_BYTE, out + k, (byte) (lo | hi << 4));
                    }
                }
            }
            int words = cols * bits / 32;
            return MlxWeight.affine(t.name(), t.type().name(), rows, cols,
                    session.fromData(codes, MlxC.MLX_UINT32, rows, words),
                    session.fromData(scales, MlxC.MLX_FLOAT32, rows, blocks),
                    session.fromData(biases, MlxC.MLX_FLOAT32, rows, blocks), bits, 32);
        }
    }

    /** Element e (0…31) of the Q4_0 block at {@code block}: low nibbles hold elements 0…15, high ones 16…31. */
    private static int nibble(MemorySegment data, long block, int e) {
        int b = data.get(ValueLayout.JAVA_BYTE, block + 2 + (e & 15)) & 0xff;
        return e < 16 ? b & 0xf : b >>> 4;
    }

    private MlxWeight affine(AffineTensor t) {
        int groups = t.groupsPerRow();
        int scaleType = switch (t.scaleType()) {
            case F16 -> MlxC.MLX_FLOAT16;
            case BF16 -> MlxC.MLX_BFLOAT16;
            default -> MlxC.MLX_FLOAT32;
        };
        int words = Math.toIntExact(t.format().packedWordsPerRow(t.cols()));
        MlxArray codes = session.fromData(t.packed(), MlxC.MLX_UINT32, t.rows(), words);
        MlxArray scales = session.fromData(t.scales(), scaleType, t.rows(), groups);
        MlxArray biases = session.fromData(t.biases(), scaleType, t.rows(), groups);
        return MlxWeight.affine(t.name(), t.format().typeName(), t.rows(), t.cols(), codes, scales, biases,
                t.format().bits(), t.format().groupSize());
    }

    /** MLX's floating-point quantisations: dequantised on the host to float32 for now. */
    private MlxWeight fp(FpTensor t) {
        float[] values = new float[Math.multiplyExact(t.rows(), t.cols())];
        for (int r = 0; r < t.rows(); r++) FpCodec.dequantizeRow(t, r, values, r * t.cols());
        return MlxWeight.dense(t.name(), t.format().typeName(), t.rows(), t.cols(), session.fromFloats(values, t.rows(), t.cols()));
    }

    private MlxWeight host(HostMatrix h) {
        if (h.values().length != (long) h.rows() * h.cols()) {
            throw new IllegalArgumentException(h.name() + ": " + h.values().length + " values for " + h.rows() + "×" + h.cols());
        }
        if (h.rows() == 1) return MlxWeight.vector(h.name(), "F32", h.cols(), session.fromFloats(h.values(), h.cols()));
        return MlxWeight.dense(h.name(), "F32", h.rows(), h.cols(), session.fromFloats(h.values(), h.rows(), h.cols()));
    }
}
