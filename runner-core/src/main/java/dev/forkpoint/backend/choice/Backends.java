package dev.forkpoint.backend.choice;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.BackendProvider;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.backend.cpu.CpuBackend;

import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * The one place backends are made: resolves a {@link BackendChoice} on this platform and creates that backend.
 * <ul>
 *   <li>{@code cpu}: the CPU backend, everywhere.</li>
 *   <li>{@code mlx}: the MLX backend, wherever its provider is on the class path ({@code runner-metal}, which the
 *       launcher puts there) and MLX-C loads — macOS arm64 with Metal, or any machine with an MLX-C built on MLX's
 *       CPU backend. When it cannot be used the choice is refused with the reason, never replaced by the CPU.</li>
 *   <li>{@code auto}: MLX on macOS arm64 when its provider is there, MLX-C loads and the MLX backend runs the model's
 *       architecture; else the CPU, saying why.</li>
 * </ul>
 * The choice and its reason are logged at INFO, once per load ("backend cpu (auto: MLX runs only on macOS arm64, this
 * is Linux amd64)").
 */
public final class Backends {
    private static final System.Logger LOG = System.getLogger(Backends.class.getName());

    private Backends() {}

    /** The backend providers on the class path, found once. */
    private static final class Providers {
        static final List<BackendProvider> ALL = ServiceLoader.load(BackendProvider.class).stream()
                .map(ServiceLoader.Provider::get).toList();
    }

    /** The backend providers on the class path (none when runner-metal is not there). */
    public static List<BackendProvider> providers() {
        return Providers.ALL;
    }

    /**
     * What {@code choice} resolves to here, and why, for any architecture; throws {@link InvalidInputException} naming
     * --backend when it cannot be honoured, so that a command refuses before it starts. {@code library} is
     * {@code --mlx-lib}'s value or null.
     */
    public static BackendSelection select(BackendChoice choice, String library) {
        return select(choice, library, Platform.current(), providers());
    }

    /**
     * Resolves {@code choice} for a model of {@code architecture} (GGUF name) and creates the backend, with
     * {@code threads} worker threads for the CPU backend; logs the choice at INFO. Refuses, as {@link #select} does, a
     * choice that cannot be honoured; an explicit {@code mlx} for an architecture the MLX backend does not run is
     * refused by the backend when the model loads ({@link Backend#checkArchitecture}).
     */
    public static Backend create(BackendChoice choice, String library, int threads, String architecture) {
        return create(choice, library, threads, KernelChoice.AUTO, architecture);
    }

    /** {@link #create(BackendChoice, String, int, String)} with the CPU backend's kernels {@code kernels}. */
    public static Backend create(BackendChoice choice, String library, int threads, KernelChoice kernels, String architecture) {
        return create(choice, library, threads, kernels, architecture, Platform.current(), providers());
    }

    static Backend create(BackendChoice choice, String library, int threads, String architecture, Platform platform,
                          List<BackendProvider> providers) {
        return create(choice, library, threads, KernelChoice.JAVA, architecture, platform, providers);
    }

    static Backend create(BackendChoice choice, String library, int threads, KernelChoice kernels, String architecture,
                          Platform platform, List<BackendProvider> providers) {
        BackendSelection s = forArchitecture(select(choice, library, platform, providers), architecture, providers);
        LOG.log(System.Logger.Level.INFO, s.describe());
        return switch (s.backend()) {
            case CPU -> new CpuBackend(threads, kernels);
            case MLX -> provider(BackendChoice.MLX, providers).orElseThrow().create(library);
            case AUTO -> throw new IllegalStateException("a selection names a concrete backend");
        };
    }

    /** {@code s}, or the CPU when auto chose MLX and the MLX backend does not run {@code architecture}. */
    static BackendSelection forArchitecture(BackendSelection s, String architecture, List<BackendProvider> providers) {
        if (s.auto() && s.backend() == BackendChoice.MLX && architecture != null
                && !provider(BackendChoice.MLX, providers).orElseThrow().runs(architecture)) {
            return new BackendSelection(BackendChoice.CPU, "auto: the MLX backend does not run " + architecture + " yet", true);
        }
        return s;
    }

    static BackendSelection select(BackendChoice choice, String library, Platform platform, List<BackendProvider> providers) {
        return switch (choice == null ? BackendChoice.AUTO : choice) {
            case CPU -> new BackendSelection(BackendChoice.CPU, "--backend cpu", false);
            case MLX -> {
                BackendProvider mlx = provider(BackendChoice.MLX, providers).orElseThrow(() -> new InvalidInputException(
                        "--backend mlx: this build of Forkpoint has no MLX backend (the runner-metal module is not on the"
                                + " class path: ./forkpoint puts it there); use --backend cpu or auto"));
                yield switch (mlx.availability(library)) {
                    case BackendProvider.Availability.Ready r -> new BackendSelection(BackendChoice.MLX, "--backend mlx: " + r.description(), false);
                    case BackendProvider.Availability.Unavailable u -> throw new InvalidInputException(
                            "--backend mlx: MLX-C cannot be used here; use --backend cpu or auto, or point --mlx-lib at libmlxc\n"
                                    + String.join("\n", u.report()));
                };
            }
            case AUTO -> {
                if (!platform.macArm64()) {
                    yield new BackendSelection(BackendChoice.CPU, "auto: MLX runs only on macOS arm64, this is " + platform, true);
                }
                Optional<BackendProvider> mlx = provider(BackendChoice.MLX, providers);
                if (mlx.isEmpty()) {
                    yield new BackendSelection(BackendChoice.CPU, "auto: this build of Forkpoint has no MLX backend (runner-metal not on the class path)", true);
                }
                yield switch (mlx.get().availability(library)) {
                    case BackendProvider.Availability.Ready r -> new BackendSelection(BackendChoice.MLX, "auto: " + r.description(), true);
                    case BackendProvider.Availability.Unavailable u -> new BackendSelection(BackendChoice.CPU,
                            "auto: MLX-C cannot be used: " + String.join("; ", u.report().stream().map(String::strip).toList()), true);
                };
            }
        };
    }

    private static Optional<BackendProvider> provider(BackendChoice kind, List<BackendProvider> providers) {
        return providers.stream().filter(p -> p.kind() == kind).findFirst();
    }
}
