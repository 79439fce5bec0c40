package dev.forkpoint.metal.mlxc;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.forkpoint.metal.LookupMiss;
import dev.forkpoint.metal.LookupResult;
import dev.forkpoint.metal.MlxLibraryLocator;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The MLX-C the {@code @Tag("mlx")} tests run on, looked for once per JVM as Forkpoint does
 * ({@code FORKPOINT_MLXC_LIB}, Homebrew, Ollama, the system loader). Not found: the tests are skipped, and one line
 * says where it looked; but when {@code FORKPOINT_MLXC_LIB} is set or {@code FORKPOINT_REQUIRE_MLX=1} (the macOS
 * workflow), MLX tests were asked for, and a miss fails them.
 * Found but unusable (does not open, lacks a function): the tests fail.
 */
public final class MlxTestLibrary {

    private static final Mlx MLX;
    private static final String SKIP;
    private static final RuntimeException BROKEN;

    static {
        Mlx mlx = null;
        String skip = null;
        RuntimeException broken = null;
        LookupResult lookup = MlxLibraryLocator.locate(Optional.empty());
        if (lookup instanceof LookupResult.NotFound notFound && System.getenv("FORKPOINT_MLXC_LIB") != null) {
            broken = new IllegalStateException("FORKPOINT_MLXC_LIB is set but names no MLX-C: "
                    + String.join("\n", notFound.report()));
        } else if (lookup instanceof LookupResult.NotFound notFound
                && "1".equals(System.getenv("FORKPOINT_REQUIRE_MLX"))) {
            broken = new IllegalStateException("FORKPOINT_REQUIRE_MLX=1 but MLX-C was not found: "
                    + String.join("\n", notFound.report()));
        } else if (lookup instanceof LookupResult.NotFound notFound) {
            skip = "MLX tests skipped: no " + notFound.libraryName() + " (set FORKPOINT_MLXC_LIB); looked at "
                    + notFound.misses().stream().map(LookupMiss::toString).collect(Collectors.joining("; "));
            System.err.println(skip);
        } else {
            try {
                mlx = Mlx.load(lookup);
            } catch (RuntimeException e) {
                broken = new IllegalStateException("MLX-C was found but cannot be used: " + e.getMessage(), e);
            }
        }
        MLX = mlx;
        SKIP = skip;
        BROKEN = broken;
    }

    private MlxTestLibrary() {}

    /** The loaded MLX-C; skips the test when there is none, fails it when the one found is unusable. */
    public static Mlx require() {
        assumeTrue(SKIP == null, SKIP);
        if (BROKEN != null) {
            fail(BROKEN.getMessage(), BROKEN);
        }
        return MLX;
    }
}
