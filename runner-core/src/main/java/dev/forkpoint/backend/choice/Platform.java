package dev.forkpoint.backend.choice;

import java.util.Locale;

/** The operating system and CPU architecture a backend is chosen for ({@code os.name}, {@code os.arch}). */
record Platform(String os, String arch) {
    static Platform current() {
        return new Platform(System.getProperty("os.name", "unknown"), System.getProperty("os.arch", "unknown"));
    }

    /** macOS on Apple Silicon: where the MLX backend can run. */
    boolean macArm64() {
        String a = arch.toLowerCase(Locale.ROOT);
        return os.toLowerCase(Locale.ROOT).startsWith("mac") && (a.equals("aarch64") || a.equals("arm64"));
    }

    @Override
    public String toString() {
        return os + " " + arch;
    }
}
