package dev.forkpoint.metal.mlxc;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * An MLX custom Metal kernel ({@code mlx_fast_metal_kernel_new}): its name, argument names and body; MLX compiles one
 * pipeline per instantiation (template arguments) on first use. Freed by {@link #close}; used only on its session's
 * thread ({@link MlxSession#metalKernel}, {@link MlxSession#applyKernel}).
 */
public final class MlxMetalKernel implements AutoCloseable {
    private final MlxSession session;
    private final MemorySegment handle;
    private final String name;
    private final List<String> inputs;
    private final List<String> outputs;
    private boolean freed;

    MlxMetalKernel(MlxSession session, MemorySegment handle, String name, List<String> inputs, List<String> outputs) {
        this.session = session;
        this.handle = handle;
        this.name = name;
        this.inputs = List.copyOf(inputs);
        this.outputs = List.copyOf(outputs);
    }

    public String name() {
        return name;
    }

    public List<String> inputs() {
        return inputs;
    }

    public List<String> outputs() {
        return outputs;
    }

    MemorySegment handle() {
        if (freed) throw new IllegalStateException("MLX Metal kernel " + name + " was freed");
        return handle;
    }

    MlxSession session() {
        return session;
    }

    @Override
    public void close() {
        if (!freed) {
            freed = true;
            session.free(this);
        }
    }
}
