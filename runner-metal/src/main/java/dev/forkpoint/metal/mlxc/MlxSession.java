package dev.forkpoint.metal.mlxc;

import static dev.forkpoint.metal.mlxc.Mlx.check;
import static dev.forkpoint.metal.mlxc.Mlx.checkHandle;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
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
    private boolean closed;

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

    /** {@code mlx_eval} of all of them: their graphs are computed when this returns. */
    public void eval(MlxArray... arrays) {
        ensureOwner();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment handles = call.allocate(MlxC.mlx_array, Math.max(1, arrays.length));
            for (int i = 0; i < arrays.length; i++) {
                MemorySegment.copy(own(arrays[i]).handle(), 0, handles, i * MlxC.mlx_array.byteSize(),
                        MlxC.mlx_array.byteSize());
            }
            MemorySegment vector = c.mlx_vector_array_new_data(call, handles, arrays.length);
            checkHandle("mlx_vector_array_new_data", vector);
            int rc = c.mlx_eval(vector);
            String message = MlxErrorHandler.take();
            int freed = c.mlx_vector_array_free(vector);
            String freeMessage = MlxErrorHandler.take();
            if (rc != 0) {
                throw new MlxException("mlx_eval", rc, message);
            }
            if (freed != 0) {
                throw new MlxException("mlx_vector_array_free", freed, freeMessage);
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

    private MlxArray result(String function, int rc, MemorySegment res) {
        String message = MlxErrorHandler.take();
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
