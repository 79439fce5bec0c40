package dev.forkpoint.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/** Describes this machine for a report: CPU model from /proc/cpuinfo, logical CPUs, memory, OS and JVM. */
final class MachineInfo {
    private MachineInfo() {}

    static CompareReport.Machine current() {
        String cpu = field(Path.of("/proc/cpuinfo"), "model name", ':').orElse(System.getProperty("os.arch") + " (no /proc/cpuinfo)");
        long memKb = field(Path.of("/proc/meminfo"), "MemTotal", ':').map(v -> Long.parseLong(v.replace("kB", "").trim())).orElse(-1L);
        String distro = field(Path.of("/etc/os-release"), "PRETTY_NAME", '=').map(v -> v.replace("\"", "") + ", ").orElse("");
        String os = distro + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch");
        String jvm = System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
        return new CompareReport.Machine(cpu, Runtime.getRuntime().availableProcessors(), memKb, os, jvm);
    }

    /** The value of the first line "key SEP value" (key compared after trimming). */
    static Optional<String> field(Path file, String key, char separator) {
        try {
            List<String> lines = Files.readAllLines(file);
            for (String line : lines) {
                int at = line.indexOf(separator);
                if (at > 0 && line.substring(0, at).trim().equals(key)) return Optional.of(line.substring(at + 1).trim());
            }
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
        return Optional.empty();
    }
}
