package dev.forkpoint.metal.mlxc;

import static dev.forkpoint.metal.mlxc.Mlx.check;
import static dev.forkpoint.metal.mlxc.Mlx.checkHandle;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * MLX-C on one thread: the thread's default device and stream (MLX's streams are thread-local, so all calls of a
 * model run on one dedicated thread), the arrays made on it, and the operations Forkpoint uses so far. Every call
 * from another thread, or after {@link #close}, is refused. Each failing MLX-C call throws an {@link MlxException}
 * with MLX's message and leaves no array behind; the session stays usable.
 */
public final class MlxSession implements AutoCloseable {

    private final Mlx mlx;
    private final MlxC c;
    private final Thread owner;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment device;
    private final MemorySegment stream;
    private final Set<MlxArray> live = Collections.newSetFromMap(new IdentityHashMap<>());
    private final Set<MlxMetalKernel> kernels = Collections.newSetFromMap(new IdentityHashMap<>());
    private boolean closed;
    private long evalNanos;   // time spent in mlx_eval (and mlx_async_eval) on this session's thread

    MlxSession(Mlx mlx) {
        this.mlx = mlx;
        this.c = mlx.bindings();
        this.owner = Thread.currentThread();
        device = arena.allocate(MlxC.mlx_device);
        stream = arena.allocate(MlxC.mlx_stream);
        try {
            check("mlx_get_default_device", c.mlx_get_default_device(device));
            check("mlx_get_default_stream", c.mlx_get_default_stream(stream, device));
        } catch (RuntimeException e) {
            freeDeviceAndStream();
            arena.close();
            throw e;
        }
    }

    public Mlx mlx() {
        return mlx;
    }

    /** A new float32 array holding a copy of {@code data} (row-major) with {@code shape} ({@code mlx_array_new_data}). */
    public MlxArray fromFloats(float[] data, int... shape) {
        ensureOwner();
        long elements = 1;
        for (int d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            }
            elements *= d;
        }
        if (elements != data.length) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " holds " + elements
                    + " elements, the data " + data.length);
        }
        MemorySegment handle = Arena.ofAuto().allocate(MlxC.mlx_array);
        try (Arena call = Arena.ofConfined()) {
            MemorySegment host = call.allocate(ValueLayout.JAVA_FLOAT, Math.max(1, data.length));
            MemorySegment.copy(data, 0, host, ValueLayout.JAVA_FLOAT, 0, data.length);
            MemorySegment dims = call.allocate(MlxC.C_INT, Math.max(1, shape.length));
            MemorySegment.copy(shape, 0, dims, MlxC.C_INT, 0, shape.length);
            MemorySegment result = c.mlx_array_new_data(
                    (size, align) -> handle, host, dims, shape.length, MlxC.MLX_FLOAT32);
            return adopt("mlx_array_new_data", result);
        }
    }

    /** {@code mlx_matmul(a, b)} on this session's stream. */
    public MlxArray matmul(MlxArray a, MlxArray b) {
        ensureOwner();
        MemorySegment res = Arena.ofAuto().allocate(MlxC.mlx_array);
        int rc = c.mlx_matmul(res, own(a).handle(), own(b).handle(), stream);
        return result("mlx_matmul", rc, res);
    }

    /** {@code mlx_add(a, b)} (broadcasting as MLX does) on this session's stream. */
    public MlxArray add(MlxArray a, MlxArray b) {
        ensureOwner();
        MemorySegment res = Arena.ofAuto().allocate(MlxC.mlx_array);
        int rc = c.mlx_add(res, own(a).handle(), own(b).handle(), stream);
        return result("mlx_add", rc, res);
    }

    /**
     * A new array holding a copy of {@code data}: {@code shape} elements of {@code dtype} (an {@code MLX_*} constant of
     * {@link MlxC}), row-major, little-endian ({@code mlx_array_new_data}). A heap segment is first copied off-heap.
     */
    public MlxArray fromData(MemorySegment data, int dtype, int... shape) {
        ensureOwner();
        long elements = elements(shape);
        long bytes = elements * dtypeBytes(dtype);
        if (data.byteSize() != bytes) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " of mlx_dtype " + dtype + " needs "
                    + bytes + " bytes, the data has " + data.byteSize());
        }
        MemorySegment handle = Arena.ofAuto().allocate(MlxC.mlx_array);
        try (Arena call = Arena.ofConfined()) {
            MemorySegment host = data;
            if (!data.isNative()) {
                host = call.allocate(Math.max(1, bytes), 16);
                MemorySegment.copy(data, 0, host, 0, bytes);
            }
            MemorySegment result = c.mlx_array_new_data((size, align) -> handle, host, ints(call, shape), shape.length, dtype);
            return adopt("mlx_array_new_data", result);
        }
    }

    /** A new int32 array holding a copy of {@code data} with {@code shape}. */
    public MlxArray fromInts(int[] data, int... shape) {
        if (elements(shape) != data.length) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " for " + data.length + " ints");
        }
        return fromData(MemorySegment.ofArray(data.clone()), MlxC.MLX_INT32, shape);
    }

    /** {@code mlx_take_axis}: the entries of {@code a} at {@code indices} (int32) along {@code axis}. */
    public MlxArray takeAxis(MlxArray a, MlxArray indices, int axis) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_take_axis", c.mlx_take_axis(res, own(a).handle(), own(indices).handle(), axis, stream), res);
    }

    /** {@code mlx_reshape}. */
    public MlxArray reshape(MlxArray a, int... shape) {
        ensureOwner();
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            return result("mlx_reshape", c.mlx_reshape(res, own(a).handle(), ints(call, shape), shape.length, stream), res);
        }
    }

    /** {@code mlx_transpose_axes}: the axes of {@code a} in the order {@code axes}. */
    public MlxArray transpose(MlxArray a, int... axes) {
        ensureOwner();
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            return result("mlx_transpose_axes",
                    c.mlx_transpose_axes(res, own(a).handle(), ints(call, axes), axes.length, stream), res);
        }
    }

    /** {@code mlx_slice} with unit strides: [start[i], stop[i]) along each axis i. */
    public MlxArray slice(MlxArray a, int[] start, int[] stop) {
        ensureOwner();
        if (start.length != stop.length) {
            throw new IllegalArgumentException("slice: " + start.length + " starts, " + stop.length + " stops");
        }
        int[] strides = new int[start.length];
        Arrays.fill(strides, 1);
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            return result("mlx_slice", c.mlx_slice(res, own(a).handle(), ints(call, start), start.length,
                    ints(call, stop), stop.length, ints(call, strides), strides.length, stream), res);
        }
    }

    /**
     * {@code mlx_slice_update} with unit strides: {@code src} with [start[i], stop[i]) along each axis i replaced by
     * {@code update} (a new array; MLX reuses src's buffer when nothing else holds src).
     */
    public MlxArray sliceUpdate(MlxArray src, MlxArray update, int[] start, int[] stop) {
        ensureOwner();
        if (start.length != stop.length) {
            throw new IllegalArgumentException("slice update: " + start.length + " starts, " + stop.length + " stops");
        }
        int[] strides = new int[start.length];
        Arrays.fill(strides, 1);
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            return result("mlx_slice_update", c.mlx_slice_update(res, own(src).handle(), own(update).handle(),
                    ints(call, start), start.length, ints(call, stop), stop.length, ints(call, strides), strides.length, stream), res);
        }
    }

    /** {@code mlx_concatenate_axis} of the arrays, in order, along {@code axis}. */
    public MlxArray concatenate(int axis, MlxArray... arrays) {
        ensureOwner();
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment vector = vector(call, arrays);
            int rc = c.mlx_concatenate_axis(res, vector, axis, stream);
            String message = MlxErrorHandler.take();
            c.mlx_vector_array_free(vector);
            MlxErrorHandler.take();
            return result("mlx_concatenate_axis", rc, res, message);
        }
    }

    /** {@code mlx_astype}: {@code a} converted to {@code dtype}. */
    public MlxArray astype(MlxArray a, int dtype) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_astype", c.mlx_astype(res, own(a).handle(), dtype, stream), res);
    }

    /** {@code mlx_multiply} (broadcasting as MLX does). */
    public MlxArray multiply(MlxArray a, MlxArray b) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_multiply", c.mlx_multiply(res, own(a).handle(), own(b).handle(), stream), res);
    }

    /** {@code mlx_sigmoid}. */
    public MlxArray sigmoid(MlxArray a) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_sigmoid", c.mlx_sigmoid(res, own(a).handle(), stream), res);
    }

    /** {@code mlx_exp}, elementwise. */
    public MlxArray exp(MlxArray a) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_exp", c.mlx_exp(res, own(a).handle(), stream), res);
    }

    /** {@code mlx_rsqrt}: 1 / √a, elementwise. */
    public MlxArray rsqrt(MlxArray a) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_rsqrt", c.mlx_rsqrt(res, own(a).handle(), stream), res);
    }

    /** {@code mlx_square}, elementwise. */
    public MlxArray square(MlxArray a) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_square", c.mlx_square(res, own(a).handle(), stream), res);
    }

    /** {@code mlx_subtract}: a − b (broadcasting as MLX does). */
    public MlxArray subtract(MlxArray a, MlxArray b) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_subtract", c.mlx_subtract(res, own(a).handle(), own(b).handle(), stream), res);
    }

    /** {@code mlx_logaddexp}: log(eᵃ + eᵇ), computed without overflow (broadcasting as MLX does). */
    public MlxArray logaddexp(MlxArray a, MlxArray b) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_logaddexp", c.mlx_logaddexp(res, own(a).handle(), own(b).handle(), stream), res);
    }

    /** {@code mlx_sum_axis}: the sum along {@code axis} (kept as a dimension of 1 when {@code keepdims}). */
    public MlxArray sumAxis(MlxArray a, int axis, boolean keepdims) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_sum_axis", c.mlx_sum_axis(res, own(a).handle(), axis, keepdims, stream), res);
    }

    /** {@code mlx_zeros}: a new float32 array of zeros with {@code shape}. */
    public MlxArray zeros(int... shape) {
        ensureOwner();
        elements(shape);
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            return result("mlx_zeros", c.mlx_zeros(res, ints(call, shape), shape.length, MlxC.MLX_FLOAT32, stream), res);
        }
    }

    /** {@code mlx_contiguous} (row-major). */
    public MlxArray contiguous(MlxArray a) {
        ensureOwner();
        MemorySegment res = newResult();
        return result("mlx_contiguous", c.mlx_contiguous(res, own(a).handle(), false, stream), res);
    }

    /**
     * {@code mlx_quantized_matmul}: x · wᵀ (transpose true) for a matrix quantised in {@code mode} ("affine", …):
     * {@code w} its uint32 codes, {@code scales} and {@code biases} (null for modes without) per group.
     */
    public MlxArray quantizedMatmul(MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, boolean transpose,
                                    int groupSize, int bits, String mode) {
        ensureOwner();
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            int rc = c.mlx_quantized_matmul(res, own(x).handle(), own(w).handle(), own(scales).handle(),
                    biases == null ? nullArray(call) : own(biases).handle(), transpose, optionalInt(call, groupSize),
                    optionalInt(call, bits), call.allocateFrom(mode), stream);
            return result("mlx_quantized_matmul", rc, res);
        }
    }

    /** {@code mlx_dequantize} of quantised codes to {@code dtype}. */
    public MlxArray dequantize(MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits, String mode,
                               int dtype) {
        ensureOwner();
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment optionalDtype = call.allocate(MlxC.mlx_optional_dtype);
            optionalDtype.set(MlxC.C_INT, 0, dtype);
            optionalDtype.set(MlxC.C_BOOL, 4, true);
            int rc = c.mlx_dequantize(res, own(w).handle(), own(scales).handle(),
                    biases == null ? nullArray(call) : own(biases).handle(), optionalInt(call, groupSize),
                    optionalInt(call, bits), call.allocateFrom(mode), nullArray(call), optionalDtype, stream);
            return result("mlx_dequantize", rc, res);
        }
    }

    /** {@code mlx_fast_rms_norm} over the last axis, times {@code weight} (null: none). */
    public MlxArray rmsNorm(MlxArray x, MlxArray weight, float eps) {
        ensureOwner();
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            int rc = c.mlx_fast_rms_norm(res, own(x).handle(), weight == null ? nullArray(call) : own(weight).handle(),
                    eps, stream);
            return result("mlx_fast_rms_norm", rc, res);
        }
    }

    /**
     * {@code mlx_fast_rope}: rotates the first {@code dims} of the last axis, the positions along axis −2 starting at
     * {@code offset}; {@code traditional} rotates adjacent pairs, otherwise halves. Either {@code base} (θ) or
     * {@code freqs} (the per-pair periods, dims/2 values: angle = position / freqs[i]) is given, the other null.
     */
    public MlxArray rope(MlxArray x, int dims, boolean traditional, Float base, float scale, int offset, MlxArray freqs) {
        ensureOwner();
        if ((base == null) == (freqs == null)) {
            throw new IllegalArgumentException("rope takes a base or frequencies, exactly one of them");
        }
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment optionalBase = call.allocate(MlxC.mlx_optional_float);
            if (base != null) {
                optionalBase.set(MlxC.C_FLOAT, 0, base);
                optionalBase.set(MlxC.C_BOOL, 4, true);
            }
            int rc = c.mlx_fast_rope(res, own(x).handle(), dims, traditional, optionalBase, scale, offset,
                    freqs == null ? nullArray(call) : own(freqs).handle(), stream);
            return result("mlx_fast_rope", rc, res);
        }
    }

    /**
     * {@code mlx_fast_scaled_dot_product_attention} of q [B, H, Lq, D] over k, v [B, Hkv, Lk, D]; {@code maskMode}
     * "" (none), "causal" (query i sees keys up to Lk − Lq + i) or "array" with {@code mask}.
     */
    public MlxArray scaledDotProductAttention(MlxArray q, MlxArray k, MlxArray v, float scale, String maskMode,
                                              MlxArray mask) {
        ensureOwner();
        MemorySegment res = newResult();
        try (Arena call = Arena.ofConfined()) {
            int rc = c.mlx_fast_scaled_dot_product_attention(res, own(q).handle(), own(k).handle(), own(v).handle(),
                    scale, call.allocateFrom(maskMode), mask == null ? nullArray(call) : own(mask).handle(),
                    nullArray(call), stream);
            return result("mlx_fast_scaled_dot_product_attention", rc, res);
        }
    }

    /** {@code mlx_eval} of all of them: their graphs are computed when this returns. */
    public void eval(MlxArray... arrays) {
        evaluate(false, arrays);
    }

    /**
     * {@code mlx_async_eval} of all of them: their graphs are scheduled and computed while this thread goes on; a
     * later {@link #eval} or {@link #toFloats} of any of them waits for it.
     */
    public void asyncEval(MlxArray... arrays) {
        evaluate(true, arrays);
    }

    private void evaluate(boolean async, MlxArray... arrays) {
        ensureOwner();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment handles = call.allocate(MlxC.mlx_array, Math.max(1, arrays.length));
            for (int i = 0; i < arrays.length; i++) {
                MemorySegment.copy(own(arrays[i]).handle(), 0, handles, i * MlxC.mlx_array.byteSize(),
                        MlxC.mlx_array.byteSize());
            }
            MemorySegment vector = c.mlx_vector_array_new_data(call, handles, arrays.length);
            checkHandle("mlx_vector_array_new_data", vector);
            long started = System.nanoTime();
            int rc = async ? c.mlx_async_eval(vector) : c.mlx_eval(vector);
            evalNanos += System.nanoTime() - started;
            String message = MlxErrorHandler.take();
            int freed = c.mlx_vector_array_free(vector);
            String freeMessage = MlxErrorHandler.take();
            if (rc != 0) {
                throw new MlxException(async ? "mlx_async_eval" : "mlx_eval", rc, message);
            }
            if (freed != 0) {
                throw new MlxException("mlx_vector_array_free", freed, freeMessage);
            }
        }
    }

    /** Whether this session's device is a GPU with Metal ({@code mlx_device_get_type}, {@code mlx_metal_is_available}). */
    public boolean onMetalGpu() {
        ensureOwner();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment type = call.allocate(MlxC.C_INT);
            check("mlx_device_get_type", c.mlx_device_get_type(type, device));
            MemorySegment metal = call.allocate(MlxC.C_BOOL);
            check("mlx_metal_is_available", c.mlx_metal_is_available(metal));
            return type.get(MlxC.C_INT, 0) == MlxC.MLX_GPU && metal.get(MlxC.C_BOOL, 0);
        }
    }

    /**
     * A custom Metal kernel ({@code mlx_fast_metal_kernel_new}) named {@code name} whose body {@code source} reads
     * {@code inputs} and writes {@code outputs}; MLX writes the signature. Inputs are made row-contiguous by MLX.
     */
    public MlxMetalKernel metalKernel(String name, List<String> inputs, List<String> outputs, String source) {
        ensureOwner();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment in = strings(call, inputs), out = strings(call, outputs);
            try {
                MemorySegment handle = c.mlx_fast_metal_kernel_new(Arena.ofAuto(), call.allocateFrom(name), in, out,
                        call.allocateFrom(source), call.allocateFrom(""), true, false);
                checkHandle("mlx_fast_metal_kernel_new", handle);
                MlxMetalKernel k = new MlxMetalKernel(this, handle, name, inputs, outputs);
                kernels.add(k);
                return k;
            } finally {
                c.mlx_vector_string_free(in);
                c.mlx_vector_string_free(out);
                MlxErrorHandler.take();
            }
        }
    }

    /**
     * Applies {@code kernel} to {@code inputs} (in the kernel's input order) as {@code launch} says
     * ({@code mlx_fast_metal_kernel_apply}); returns its outputs, lazily evaluated like any MLX array. MLX checks the
     * threadgroup against the compiled pipeline when it runs: "Maximum threads per threadgroup is N …" then comes from
     * {@link #eval}.
     */
    public List<MlxArray> applyKernel(MlxMetalKernel kernel, List<MlxArray> inputs, KernelLaunch launch) {
        ensureOwner();
        if (kernel.session() != this) throw new IllegalArgumentException("a kernel of another MLX session");
        if (inputs.size() != kernel.inputs().size() || launch.outputs().size() != kernel.outputs().size()) {
            throw new IllegalArgumentException("kernel " + kernel.name() + " takes " + kernel.inputs().size() + " inputs and makes "
                    + kernel.outputs().size() + " outputs, given " + inputs.size() + " and " + launch.outputs().size());
        }
        try (Arena call = Arena.ofConfined()) {
            MemorySegment config = c.mlx_fast_metal_kernel_config_new(call);
            checkHandle("mlx_fast_metal_kernel_config_new", config);
            MemorySegment in = null;
            MemorySegment results = null;
            try {
                for (KernelLaunch.Output o : launch.outputs()) {
                    check("mlx_fast_metal_kernel_config_add_output_arg", c.mlx_fast_metal_kernel_config_add_output_arg(
                            config, ints(call, o.shape()), o.shape().length, o.dtype()));
                }
                int[] g = launch.grid(), t = launch.threadgroup();
                check("mlx_fast_metal_kernel_config_set_grid", c.mlx_fast_metal_kernel_config_set_grid(config, g[0], g[1], g[2]));
                check("mlx_fast_metal_kernel_config_set_thread_group", c.mlx_fast_metal_kernel_config_set_thread_group(config, t[0], t[1], t[2]));
                for (var e : launch.dtypeArgs().entrySet()) {
                    check("mlx_fast_metal_kernel_config_add_template_arg_dtype", c.mlx_fast_metal_kernel_config_add_template_arg_dtype(
                            config, call.allocateFrom(e.getKey()), e.getValue()));
                }
                for (var e : launch.intArgs().entrySet()) {
                    check("mlx_fast_metal_kernel_config_add_template_arg_int", c.mlx_fast_metal_kernel_config_add_template_arg_int(
                            config, call.allocateFrom(e.getKey()), e.getValue()));
                }
                in = vector(call, inputs.toArray(MlxArray[]::new));
                results = c.mlx_vector_array_new(call);
                checkHandle("mlx_vector_array_new", results);
                int rc = c.mlx_fast_metal_kernel_apply(results, kernel.handle(), in, config, stream);   // fills the vector in place
                String message = MlxErrorHandler.take();
                if (rc != 0) throw new MlxException("mlx_fast_metal_kernel_apply", rc, message);
                long count = c.mlx_vector_array_size(results);
                checkValue("mlx_vector_array_size");
                List<MlxArray> outs = new java.util.ArrayList<>();
                try {
                    for (long i = 0; i < count; i++) {
                        MemorySegment res = newResult();
                        outs.add(result("mlx_vector_array_get", c.mlx_vector_array_get(res, results, i), res));
                    }
                } catch (RuntimeException e) {
                    for (MlxArray a : outs) a.close();
                    throw e;
                }
                return outs;
            } finally {
                c.mlx_fast_metal_kernel_config_free(config);
                if (in != null) c.mlx_vector_array_free(in);
                if (results != null) c.mlx_vector_array_free(results);
                MlxErrorHandler.take();
            }
        }
    }

    /** {@code mlx_synchronize} of this session's stream: everything queued on it is done. */
    public void synchronize() {
        ensureOwner();
        check("mlx_synchronize", c.mlx_synchronize(stream));
    }

    /**
     * The array's values, evaluated first, copied out row-major ({@code mlx_array_data_float32}). It must be float32
     * and row-contiguous (all arrays the operations here make are).
     */
    public float[] toFloats(MlxArray array) {
        ensureOwner();
        eval(array);
        MemorySegment h = own(array).handle();
        int dtype = c.mlx_array_dtype(h);
        checkValue("mlx_array_dtype");
        if (dtype != MlxC.MLX_FLOAT32) {
            throw new IllegalArgumentException("not a float32 array (mlx_dtype " + dtype + ")");
        }
        int[] shape = shape(array);
        long size = c.mlx_array_size(h);
        checkValue("mlx_array_size");
        MemorySegment strides = c.mlx_array_strides(h);
        checkPointer("mlx_array_strides", strides, shape.length);
        strides = strides.reinterpret(8L * shape.length);
        long expected = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            long stride = strides.getAtIndex(MlxC.C_SIZE_T, i);
            if (shape[i] > 1 && stride != expected) {
                throw new IllegalArgumentException("not row-contiguous: shape " + Arrays.toString(shape)
                        + ", stride " + stride + " at dimension " + i);
            }
            expected *= shape[i];
        }
        if (size != expected) {
            throw new IllegalStateException("mlx_array_size " + size + " for shape " + Arrays.toString(shape));
        }
        float[] out = new float[Math.toIntExact(size)];
        MemorySegment data = c.mlx_array_data_float32(h);
        checkPointer("mlx_array_data_float32", data, out.length);
        MemorySegment.copy(data.reinterpret(4L * out.length), ValueLayout.JAVA_FLOAT, 0, out, 0, out.length);
        return out;
    }

    /** Nanoseconds this session has spent inside {@code mlx_eval} so far (the computing; the rest is graph building). */
    public long evalNanos() {
        return evalNanos;
    }

    /** Arrays made in this session and not yet freed. */
    public int liveArrays() {
        return live.size();
    }

    int[] shape(MlxArray array) {
        ensureOwner();
        MemorySegment h = own(array).handle();
        long ndim = c.mlx_array_ndim(h);
        checkValue("mlx_array_ndim");
        if (ndim == 0) {
            return new int[0];
        }
        MemorySegment dims = c.mlx_array_shape(h);
        checkPointer("mlx_array_shape", dims, (int) ndim);
        int[] shape = new int[Math.toIntExact(ndim)];
        MemorySegment.copy(dims.reinterpret(4L * ndim), MlxC.C_INT, 0, shape, 0, shape.length);
        return shape;
    }

    void free(MlxArray array) {
        ensureOwner();
        if (array.session() != this) {
            throw new IllegalArgumentException("an array of another MLX session");
        }
        if (array.freed()) {
            return;
        }
        array.markFreed();
        live.remove(array);
        check("mlx_array_free", c.mlx_array_free(array.handleUnchecked()));
    }

    /** Frees every array still live, then the stream and device handles. */
    @Override
    public void close() {
        ensureOwnerThread();
        if (closed) {
            return;
        }
        MlxException first = null;
        for (MlxMetalKernel kernel : kernels.toArray(MlxMetalKernel[]::new)) kernel.close();
        for (MlxArray array : live.toArray(MlxArray[]::new)) {
            try {
                free(array);
            } catch (MlxException e) {
                first = first == null ? e : first;
            }
        }
        closed = true;
        freeDeviceAndStream();
        arena.close();
        if (first != null) {
            throw first;
        }
    }

    private static MemorySegment newResult() {
        return Arena.ofAuto().allocate(MlxC.mlx_array);
    }

    private static MemorySegment nullArray(Arena call) {
        return call.allocate(MlxC.mlx_array);   // zeroed: ctx NULL, which MLX-C reads as "none"
    }

    private static MemorySegment optionalInt(Arena call, int value) {
        MemorySegment o = call.allocate(MlxC.mlx_optional_int);
        o.set(MlxC.C_INT, 0, value);
        o.set(MlxC.C_BOOL, 4, true);
        return o;
    }

    private static MemorySegment ints(Arena call, int[] values) {
        MemorySegment dims = call.allocate(MlxC.C_INT, Math.max(1, values.length));
        MemorySegment.copy(values, 0, dims, MlxC.C_INT, 0, values.length);
        return dims;
    }

    private MemorySegment vector(Arena call, MlxArray[] arrays) {
        MemorySegment handles = call.allocate(MlxC.mlx_array, Math.max(1, arrays.length));
        for (int i = 0; i < arrays.length; i++) {
            MemorySegment.copy(own(arrays[i]).handle(), 0, handles, i * MlxC.mlx_array.byteSize(), MlxC.mlx_array.byteSize());
        }
        MemorySegment vector = c.mlx_vector_array_new_data(call, handles, arrays.length);
        checkHandle("mlx_vector_array_new_data", vector);
        return vector;
    }

    private MemorySegment strings(Arena call, List<String> values) {
        MemorySegment pointers = call.allocate(MlxC.C_POINTER, Math.max(1, values.size()));
        for (int i = 0; i < values.size(); i++) pointers.setAtIndex(MlxC.C_POINTER, i, call.allocateFrom(values.get(i)));
        MemorySegment vector = c.mlx_vector_string_new_data(call, pointers, values.size());
        checkHandle("mlx_vector_string_new_data", vector);
        return vector;
    }

    void free(MlxMetalKernel kernel) {
        ensureOwnerThread();
        if (kernels.remove(kernel)) {
            c.mlx_fast_metal_kernel_free(kernel.handle());
            MlxErrorHandler.take();
        }
    }

    private static long elements(int[] shape) {
        long elements = 1;
        for (int d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            }
            elements *= d;
        }
        return elements;
    }

    /** Bytes of one element of an {@code MLX_*} dtype this session makes arrays of. */
    static int dtypeBytes(int dtype) {
        return switch (dtype) {
            case MlxC.MLX_UINT8 -> 1;
            case MlxC.MLX_FLOAT16, MlxC.MLX_BFLOAT16 -> 2;
            case MlxC.MLX_UINT32, MlxC.MLX_INT32, MlxC.MLX_FLOAT32 -> 4;
            default -> throw new IllegalArgumentException("arrays of mlx_dtype " + dtype + " are not made from host data here");
        };
    }

    private MlxArray result(String function, int rc, MemorySegment res) {
        return result(function, rc, res, MlxErrorHandler.take());
    }

    private MlxArray result(String function, int rc, MemorySegment res, String message) {
        boolean empty = res.get(MlxC.C_POINTER, 0).equals(MemorySegment.NULL);
        if (rc != 0 || empty) {
            if (!empty) {
                c.mlx_array_free(res);
                MlxErrorHandler.take();
            }
            throw new MlxException(function, rc, message);
        }
        return track(res);
    }

    private MlxArray adopt(String function, MemorySegment handle) {
        try {
            checkHandle(function, handle);
        } catch (MlxException e) {
            if (!handle.get(MlxC.C_POINTER, 0).equals(MemorySegment.NULL)) {
                c.mlx_array_free(handle);
                MlxErrorHandler.take();
            }
            throw e;
        }
        return track(handle);
    }

    private MlxArray track(MemorySegment handle) {
        MlxArray array = new MlxArray(this, handle);
        live.add(array);
        return array;
    }

    private MlxArray own(MlxArray array) {
        if (array.session() != this) {
            throw new IllegalArgumentException("an array of another MLX session");
        }
        return array;
    }

    /** After an MLX-C call that returns a value and no code: a message from MLX is its failure. */
    private static void checkValue(String function) {
        String message = MlxErrorHandler.take();
        if (message != null) {
            throw new MlxException(function, -1, message);
        }
    }

    private static void checkPointer(String function, MemorySegment pointer, int elements) {
        String message = MlxErrorHandler.take();
        if (message != null || (elements > 0 && pointer.equals(MemorySegment.NULL))) {
            throw new MlxException(function, -1, message);
        }
    }

    private void freeDeviceAndStream() {
        if (!stream.get(MlxC.C_POINTER, 0).equals(MemorySegment.NULL)) {
            c.mlx_stream_free(stream);
        }
        if (!device.get(MlxC.C_POINTER, 0).equals(MemorySegment.NULL)) {
            c.mlx_device_free(device);
        }
        MlxErrorHandler.take();
    }

    private void ensureOwner() {
        ensureOwnerThread();
        if (closed) {
            throw new IllegalStateException("this MLX session is closed");
        }
    }

    private void ensureOwnerThread() {
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("an MLX session is used on the thread that opened it (" + owner.getName()
                    + "), not on " + Thread.currentThread().getName() + ": MLX's streams are thread-local");
        }
    }
}
