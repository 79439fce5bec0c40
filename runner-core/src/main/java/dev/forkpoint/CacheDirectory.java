package dev.forkpoint;

import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;

/**
 * Forkpoint's per-user cache (the built-in model, the compiled native kernels): {@code $XDG_CACHE_HOME/forkpoint} when
 * that is set (an absolute path), otherwise {@code ~/Library/Caches/forkpoint} on macOS, {@code %LOCALAPPDATA%\forkpoint}
 * on Windows and {@code ~/.cache/forkpoint} elsewhere.
 */
public final class CacheDirectory {
    private CacheDirectory() {}

    /** The cache directory for the environment {@code env} (XDG_CACHE_HOME, HOME, LOCALAPPDATA). */
    public static Path of(Map<String, String> env) {
        String xdg = env.get("XDG_CACHE_HOME");
        if (xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute()) return Path.of(xdg, "forkpoint");
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String home = env.getOrDefault("HOME", System.getProperty("user.home"));
        if (os.contains("mac") || os.contains("darwin")) return Path.of(home, "Library", "Caches", "forkpoint");
        String localAppData = env.get("LOCALAPPDATA");
        if (os.contains("windows") && localAppData != null && !localAppData.isBlank()) return Path.of(localAppData, "forkpoint");
        return Path.of(home, ".cache", "forkpoint");
    }
}
