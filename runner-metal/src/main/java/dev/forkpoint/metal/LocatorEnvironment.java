package dev.forkpoint.metal;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * What {@link MlxLibraryLocator} looks at, injectable so tests can simulate hits and misses: the environment, the
 * {@code PATH} folders, the OS name and architecture ({@code os.name}, {@code os.arch}), whether a path is a
 * regular file, a folder's entries (for Ollama's {@code mlx_*} folders; empty when it is none) and the system
 * loader (a bare library name opened, or why not).
 */
public record LocatorEnvironment(Map<String, String> env, List<Path> pathDirs, String osName, String osArch,
                                 Predicate<Path> isFile, Function<Path, List<Path>> listDirectory,
                                 SystemLoader systemLoader) {

    /** Opens a bare library name through the system loader: empty when it loads, else why not. */
    @FunctionalInterface
    public interface SystemLoader {
        Optional<String> tryLoad(String libraryName);
    }

    public LocatorEnvironment {
        env = Map.copyOf(env);
        pathDirs = List.copyOf(pathDirs);
    }

    /** This process's environment, file system and loader. */
    public static LocatorEnvironment current() {
        return new LocatorEnvironment(System.getenv(), pathDirs(System.getenv("PATH")), System.getProperty("os.name"),
                System.getProperty("os.arch"), Files::isRegularFile, LocatorEnvironment::list,
                LocatorEnvironment::dlopen);
    }

    public boolean isMac() {
        return osName.toLowerCase(java.util.Locale.ROOT).startsWith("mac");
    }

    public boolean isWindows() {
        return osName.toLowerCase(java.util.Locale.ROOT).startsWith("windows");
    }

    /** MLX-C's file name on this OS: what {@code System.mapLibraryName("mlxc")} gives there. */
    public String libraryName() {
        return isMac() ? "libmlxc.dylib" : isWindows() ? "mlxc.dll" : "libmlxc.so";
    }

    static List<Path> pathDirs(String path) {
        List<Path> dirs = new ArrayList<>();
        if (path == null) {
            return dirs;
        }
        for (String entry : path.split(File.pathSeparator)) {
            if (!entry.isBlank()) {
                try {
                    dirs.add(Path.of(entry));
                } catch (InvalidPathException ignored) {
                    // a PATH entry that is no path cannot hold ollama
                }
            }
        }
        return dirs;
    }

    private static List<Path> list(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.toList();
        } catch (IOException | SecurityException e) {
            return List.of();
        }
    }

    private static Optional<String> dlopen(String libraryName) {
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup(libraryName, arena);
            return Optional.empty();
        } catch (IllegalArgumentException | IllegalCallerException | UnsatisfiedLinkError e) {
            return Optional.of(String.valueOf(e.getMessage()));
        }
    }
}
