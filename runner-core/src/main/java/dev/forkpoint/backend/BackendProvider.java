package dev.forkpoint.backend;

import java.util.List;

/**
 * A backend that lives outside runner-core — the MLX backend of the {@code runner-metal} module — found on the class
 * path with {@link java.util.ServiceLoader} (a {@code META-INF/services/dev.forkpoint.backend.BackendProvider}
 * entry), so that runner-core depends on none of them and runs on the CPU backend when none is there.
 * {@link dev.forkpoint.backend.choice.Backends} asks it whether it can run here, and for the backend.
 *
 * <p>{@code library} in each method is the value of the backend's library option ({@code --mlx-lib}), or null to look
 * where the provider looks by default.
 */
public interface BackendProvider {
    /** The choice this provides ({@link BackendChoice#MLX}). */
    BackendChoice kind();

    /**
     * Whether the backend can be used here: loads its native library (once per process) and says what it loaded, or
     * why it cannot, with each place it looked.
     */
    Availability availability(String library);

    /** Whether its ops cover the architecture (GGUF {@code general.architecture} name). */
    boolean runs(String architecture);

    /** A new backend on the library {@link #availability} found (call that first). */
    Backend create(String library);

    /** Lines for {@code forkpoint doctor}: where the library was looked for and found, its version, the device. */
    List<String> diagnose(String library);

    /** What {@link #availability} found. */
    sealed interface Availability {
        /** Usable: {@code description} says what was loaded ("MLX-C at /opt/homebrew/lib/libmlxc.dylib, MLX 0.31.2"). */
        record Ready(String description) implements Availability {}

        /** Not usable, with the lines that say why (each place looked, then the outcome). */
        record Unavailable(List<String> report) implements Availability {
            public Unavailable {
                report = List.copyOf(report);
            }
        }
    }
}
