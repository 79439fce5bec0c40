package dev.forkpoint.cli;

import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.choice.BackendSelection;
import dev.forkpoint.backend.choice.Backends;
import picocli.CommandLine.Option;

/** {@code --backend} and {@code --mlx-lib}, shared by the commands that load models (a picocli mixin). */
final class BackendOption {
    @Option(names = "--backend", paramLabel = "cpu|mlx|auto",
            description = "Compute backend: cpu; mlx (MLX-C: Metal on Apple Silicon, or an MLX-C built for the CPU);"
                    + " auto = mlx on macOS arm64 when MLX-C loads and runs the model, else cpu.")
    String backend = "auto";

    @Option(names = "--mlx-lib", paramLabel = "PATH",
            description = "The MLX-C library for the MLX backend (libmlxc.dylib / libmlxc.so, or a folder holding it);"
                    + " default: $FORKPOINT_MLXC_LIB, Homebrew, an installed Ollama's, the loader path.")
    String mlxLib;

    @Option(names = "--kernels", paramLabel = "java|native|auto",
            description = "CPU backend kernels for Q8_0 / Q4_0 / Q4_K / Q6_K / F16 / BF16 / F32 matrices: java (Vector API); native (C, built here with"
                    + " cc/gcc/clang for this CPU); auto = $FORKPOINT_KERNELS when set, else native when a C compiler built them, else java.")
    String kernels = "auto";

    /** The parsed --kernels (refused naming the option when it is not java, native or auto). */
    dev.forkpoint.backend.KernelChoice kernelChoice() {
        return dev.forkpoint.backend.KernelChoice.parse(kernels);
    }

    /** The parsed --backend (refused naming the option when it is not cpu, mlx or auto). */
    BackendChoice choice() {
        return BackendChoice.parse(backend);
    }

    /** Resolves the choice here, refusing one that cannot be honoured before the command does anything. */
    BackendSelection check() {
        return Backends.select(choice(), mlxLib);
    }
}
