package dev.forkpoint.metal;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Finds MLX-C where users have it. Tried in order, the first hit wins, and every miss says why:
 * <ol>
 *   <li>{@code --mlx-lib} (a library file, or a folder holding {@code libmlxc.*}),</li>
 *   <li>{@code FORKPOINT_MLXC_LIB} (the same),</li>
 *   <li>Homebrew: {@code /opt/homebrew/lib}, {@code /usr/local/lib}, {@code /opt/homebrew/opt/mlx-c/lib} (and
 *       {@code $HOMEBREW_PREFIX/opt/mlx-c/lib} when that prefix is another),</li>
 *   <li>the MLX-C an installed Ollama bundles: {@code <prefix>/lib/ollama/mlx_*}/ next to each {@code ollama} on the
 *       {@code PATH} ({@code <prefix>/bin/ollama}), and on macOS
 *       {@code /Applications/Ollama.app/Contents/Resources/lib/ollama/mlx_*},</li>
 *   <li>the system loader's search path (the bare name, {@code System.mapLibraryName("mlxc")}).</li>
 * </ol>
 * A miss in an explicit place ({@code --mlx-lib}, the variable) is reported and the search goes on; the caller
 * decides whether that is an error. Finding a file is not loading it: that the library opens and has every bound
 * symbol is checked when it is loaded. Nothing here builds or downloads anything.
 */
public final class MlxLibraryLocator {

    private static final System.Logger LOG = System.getLogger(MlxLibraryLocator.class.getName());

    static final String ENV_VARIABLE = "FORKPOINT_MLXC_LIB";
    static final List<Path> HOMEBREW_DIRS = List.of(Path.of("/opt/homebrew/lib"), Path.of("/usr/local/lib"),
            Path.of("/opt/homebrew/opt/mlx-c/lib"));
    static final Path OLLAMA_APP_LIBS = Path.of("/Applications/Ollama.app/Contents/Resources/lib/ollama");

    private MlxLibraryLocator() {}

    /** Looks in this process's environment. */
    public static LookupResult locate(Optional<String> mlxLibOption) {
        return locate(mlxLibOption, LocatorEnvironment.current());
    }

    public static LookupResult locate(Optional<String> mlxLibOption, LocatorEnvironment env) {
        Search search = new Search(env);
        LookupResult result = search.run(mlxLibOption);
        switch (result) {
            case LookupResult.Found f -> LOG.log(System.Logger.Level.DEBUG, "MLX-C found at {0} after {1} misses",
                    f.place(), f.misses().size());
            case LookupResult.NotFound n -> LOG.log(System.Logger.Level.DEBUG, () -> String.join("\n", n.report()));
        }
        return result;
    }

    /** One lookup: the misses so far and the paths already tried (a place listed twice is tried once). */
    private static final class Search {
        private final LocatorEnvironment env;
        private final String libraryName;
        private final List<LookupMiss> misses = new ArrayList<>();
        private final Set<Path> tried = new HashSet<>();

        Search(LocatorEnvironment env) {
            this.env = env;
            this.libraryName = env.libraryName();
        }

        LookupResult run(Optional<String> option) {
            Optional<LookupResult> hit = explicit(LibrarySource.OPTION, "--mlx-lib", option, "not given")
                    .or(() -> explicit(LibrarySource.ENVIRONMENT, ENV_VARIABLE,
                            Optional.ofNullable(env.env().get(ENV_VARIABLE)), "not set"))
                    .or(this::homebrew)
                    .or(this::ollama)
                    .or(this::systemLoader);
            return hit.orElseGet(() -> new LookupResult.NotFound(libraryName, misses));
        }

        private Optional<LookupResult> explicit(LibrarySource source, String name, Optional<String> value,
                                                String absent) {
            if (value.isEmpty()) {
                return miss(source, name, absent);
            }
            if (value.get().isBlank()) {
                return miss(source, name, "empty");
            }
            Path path;
            try {
                path = Path.of(value.get());
            } catch (InvalidPathException e) {
                return miss(source, name + " " + value.get(), "not a path (" + e.getReason() + ")");
            }
            if (env.isFile().test(path)) {
                return found(source, path, path + " (" + name + ")");
            }
            Path inside = path.resolve(libraryName);
            if (env.isFile().test(inside)) {
                return found(source, inside, inside + " (" + name + ")");
            }
            return miss(source, name + " " + path, "no such file, nor a folder holding " + libraryName);
        }

        private Optional<LookupResult> homebrew() {
            List<Path> dirs = new ArrayList<>(HOMEBREW_DIRS);
            String prefix = env.env().get("HOMEBREW_PREFIX");
            if (prefix != null && !prefix.isBlank()) {
                try {
                    dirs.add(Path.of(prefix, "opt", "mlx-c", "lib"));
                } catch (InvalidPathException ignored) {
                    misses.add(new LookupMiss(LibrarySource.HOMEBREW, "HOMEBREW_PREFIX " + prefix, "not a path"));
                }
            }
            for (Path dir : dirs) {
                Optional<LookupResult> hit = file(LibrarySource.HOMEBREW, dir.resolve(libraryName));
                if (hit.isPresent()) {
                    return hit;
                }
            }
            return Optional.empty();
        }

        private Optional<LookupResult> ollama() {
            String exe = env.isWindows() ? "ollama.exe" : "ollama";
            boolean onPath = false;
            for (Path dir : env.pathDirs()) {
                if (!env.isFile().test(dir.resolve(exe))) {
                    continue;
                }
                onPath = true;
                Path prefix = dir.toAbsolutePath().getParent();
                if (prefix == null) {
                    misses.add(new LookupMiss(LibrarySource.OLLAMA, dir.resolve(exe).toString(),
                            "its folder has no parent to hold lib/ollama"));
                    continue;
                }
                Optional<LookupResult> hit = ollamaLibs(prefix.resolve("lib").resolve("ollama"),
                        "next to " + dir.resolve(exe));
                if (hit.isPresent()) {
                    return hit;
                }
            }
            if (!onPath) {
                misses.add(new LookupMiss(LibrarySource.OLLAMA, "ollama on the PATH",
                        "not in any of the " + env.pathDirs().size() + " PATH folders"));
            }
            if (env.isMac()) {
                return ollamaLibs(OLLAMA_APP_LIBS, "Ollama.app");
            }
            misses.add(new LookupMiss(LibrarySource.OLLAMA, OLLAMA_APP_LIBS + "/mlx_*", "macOS only"));
            return Optional.empty();
        }

        /** {@code libs/mlx_*}/libmlxc.*, the folders in name order. */
        private Optional<LookupResult> ollamaLibs(Path libs, String which) {
            List<Path> mlxDirs = env.listDirectory().apply(libs).stream()
                    .filter(p -> p.getFileName() != null && p.getFileName().toString().startsWith("mlx_"))
                    .sorted(Comparator.comparing(p -> p.getFileName().toString()))
                    .toList();
            if (mlxDirs.isEmpty()) {
                misses.add(new LookupMiss(LibrarySource.OLLAMA, libs + "/mlx_* (" + which + ")",
                        "no mlx_* folder (this Ollama bundles no MLX, or is not there)"));
                return Optional.empty();
            }
            for (Path dir : mlxDirs) {
                Optional<LookupResult> hit = file(LibrarySource.OLLAMA, dir.resolve(libraryName));
                if (hit.isPresent()) {
                    return hit;
                }
            }
            return Optional.empty();
        }

        private Optional<LookupResult> systemLoader() {
            String place = "system loader (" + libraryName + ")";
            Optional<String> failure = env.systemLoader().tryLoad(libraryName);
            if (failure.isEmpty()) {
                return Optional.of(new LookupResult.Found(LibrarySource.SYSTEM_LOADER, place,
                        new LibraryTarget.LoaderName(libraryName), libraryName, misses));
            }
            return miss(LibrarySource.SYSTEM_LOADER, place, failure.get());
        }

        private Optional<LookupResult> file(LibrarySource source, Path path) {
            if (!tried.add(path)) {
                return Optional.empty();
            }
            if (env.isFile().test(path)) {
                return found(source, path, path + " (" + source.label() + ")");
            }
            return miss(source, path + " (" + source.label() + ")", "no such file");
        }

        private Optional<LookupResult> found(LibrarySource source, Path path, String place) {
            tried.add(path);
            return Optional.of(new LookupResult.Found(source, place, new LibraryTarget.File(path), libraryName,
                    misses));
        }

        private Optional<LookupResult> miss(LibrarySource source, String place, String reason) {
            misses.add(new LookupMiss(source, place, reason));
            return Optional.empty();
        }
    }
}
