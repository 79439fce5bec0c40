package dev.forkpoint.backend.choice;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** The operating system and CPU architecture a backend is chosen for ({@code os.name}, {@code os.arch}), and what
 * {@code forkpoint doctor} and the benchmarks' machine line say about this machine. */
public record Platform(String os, String arch) {
    public static Platform current() {
        return new Platform(System.getProperty("os.name", "unknown"), System.getProperty("os.arch", "unknown"));
    }

    /** macOS on Apple Silicon: where the MLX backend runs on Metal. */
    public boolean macArm64() {
        String a = arch.toLowerCase(Locale.ROOT);
        return os.toLowerCase(Locale.ROOT).startsWith("mac") && (a.equals("aarch64") || a.equals("arm64"));
    }

    /**
     * The CPU's model name: /proc/cpuinfo's "model name" on Linux, {@code sysctl machdep.cpu.brand_string} on macOS
     * ("Apple M2 Pro"); empty when neither says.
     */
    public static Optional<String> cpuModel() {
        Optional<String> linux = field(Path.of("/proc/cpuinfo"), "model name", ':');
        if (linux.isPresent()) return linux;
        return command("sysctl", "-n", "machdep.cpu.brand_string");
    }

    /** The distribution's name on Linux (/etc/os-release PRETTY_NAME, e.g. "Debian GNU/Linux 12 (bookworm)"). */
    public static Optional<String> distribution() {
        return field(Path.of("/etc/os-release"), "PRETTY_NAME", '=').map(v -> v.replace("\"", ""));
    }

    /** The value of the first line "key SEP value" of {@code file} (key compared after trimming). */
    public static Optional<String> field(Path file, String key, char separator) {
        try {
            for (String line : Files.readAllLines(file)) {
                int at = line.indexOf(separator);
                if (at > 0 && line.substring(0, at).trim().equals(key)) return Optional.of(line.substring(at + 1).trim());
            }
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
        return Optional.empty();
    }

    /** The first line a short command prints, or empty when it is not there, fails or takes over 2 s. */
    private static Optional<String> command(String... argv) {
        try {
            Process p = new ProcessBuilder(List.of(argv)).redirectErrorStream(true).start();
            if (!p.waitFor(2, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Optional.empty();
            }
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return p.exitValue() == 0 && !out.isEmpty() ? Optional.of(out.lines().findFirst().orElseThrow()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    @Override
    public String toString() {
        return os + " " + arch;
    }
}
