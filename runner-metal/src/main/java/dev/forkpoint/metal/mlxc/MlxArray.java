package dev.forkpoint.metal.mlxc;

import java.lang.foreign.MemorySegment;

/**
 * An {@code mlx_array} handle owned by Java: freed ({@code mlx_array_free}) by {@link #close}, once; what its
 * session has not freed when it closes, the session frees. Used only on its session's thread.
 */
public final class MlxArray implements AutoCloseable {

    private final MlxSession session;
    private final MemorySegment handle;
    private boolean freed;

    MlxArray(MlxSession session, MemorySegment handle) {
        this.session = session;
        this.handle = handle;
    }

    /** The {@code mlx_array} struct (one pointer), to pass by value. */
    MemorySegment handle() {
        if (freed) {
            throw new IllegalStateException("this MLX array was freed");
        }
        return handle;
    }

    /** The handle even when freed (for the session's own bookkeeping). */
    MemorySegment handleUnchecked() {
        return handle;
    }

    MlxSession session() {
        return session;
    }

    boolean freed() {
        return freed;
    }

    void markFreed() {
        freed = true;
    }

    /** The shape, outermost first. */
    public int[] shape() {
        return session.shape(this);
    }

    @Override
    public void close() {
        session.free(this);
    }
}
