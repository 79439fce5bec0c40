package dev.forkpoint.bench;

import dev.forkpoint.backend.choice.Platform;

import java.nio.file.Path;

/** Describes this machine for a report: CPU model from /proc/cpuinfo (sysctl on macOS), logical CPUs, memory, OS and JVM. */
final class MachineInfo {
    private MachineInfo() {}

    static CompareReport.Machine current() {
        String cpu = Platform.cpuModel().orElse(System.getProperty("os.arch") + " (no CPU model name found)");
        long memKb = Platform.field(Path.of("/proc/meminfo"), "MemTotal", ':').map(v -> Long.parseLong(v.replace("kB", "").trim())).orElse(-1L);
        String distro = Platform.distribution().map(v -> v + ", ").orElse("");
        String os = distro + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch");
        String jvm = System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
        return new CompareReport.Machine(cpu, Runtime.getRuntime().availableProcessors(), memKb, os, jvm);
    }
}
