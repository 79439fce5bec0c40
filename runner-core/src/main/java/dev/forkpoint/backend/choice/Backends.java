package dev.forkpoint.backend.choice;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.cpu.CpuBackend;

/**
 * The one place backends are made: resolves a {@link BackendChoice} on this platform and creates that backend.
 * {@code cpu} is the CPU backend; {@code auto} is MLX on macOS arm64 when MLX-C loads, else the CPU (this version has
 * no MLX backend, so auto resolves to the CPU and says why); {@code mlx} is refused with the reason, never replaced by
 * the CPU silently.
 */
public final class Backends {
    private static final System.Logger LOG = System.getLogger(Backends.class.getName());

    private Backends() {}

    /** Resolves {@code choice} here and creates the backend with {@code threads} worker threads; logs the choice at INFO. */
    public static Backend create(BackendChoice choice, int threads) {
        BackendSelection s = select(choice);
        LOG.log(System.Logger.Level.INFO, s.describe());
        return switch (s.backend()) {
            case CPU -> new CpuBackend(threads);
            case MLX, AUTO -> throw new IllegalStateException("no " + s.backend().label() + " backend to create");   // select refuses MLX
        };
    }

    /**
     * What {@code choice} resolves to on this platform, and why; throws {@link InvalidInputException} naming
     * --backend when it cannot be honoured (so a command can refuse before it starts).
     */
    public static BackendSelection select(BackendChoice choice) {
        return select(choice, Platform.current());
    }

    static BackendSelection select(BackendChoice choice, Platform platform) {
        return switch (choice == null ? BackendChoice.AUTO : choice) {
            case CPU -> new BackendSelection(BackendChoice.CPU, "--backend cpu");
            case AUTO -> new BackendSelection(BackendChoice.CPU, platform.macArm64()
                    ? "auto: MLX backend not built in this version"
                    : "auto: MLX runs only on macOS arm64, this is " + platform);
            case MLX -> throw new InvalidInputException(platform.macArm64()
                    ? "--backend mlx: this version of Forkpoint has no MLX backend yet; use --backend cpu or auto"
                    : "--backend mlx: the MLX backend runs only on macOS arm64 (this is " + platform
                            + "), and this version of Forkpoint has none yet; use --backend cpu or auto");
        };
    }
}
