package dev.forkpoint.bench.probe;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The client side of the runbook's triple: the OS and CPU of the machine the probe runs on. {@code cpuModel} is the
 * first "model name" line of /proc/cpuinfo (Linux x86 and most ARM kernels), or null where there is none.
 */
record ClientMachine(String osName, String osVersion, String arch, String cpuModel, int cores) {

    static ClientMachine current() {
        return new ClientMachine(System.getProperty("os.name"), System.getProperty("os.version"), System.getProperty("os.arch"),
                cpuModel(Path.of("/proc/cpuinfo")), Runtime.getRuntime().availableProcessors());
    }

    /** The value of the first "model name" line of a cpuinfo file, or null when it is missing or unreadable. */
    static String cpuModel(Path cpuinfo) {
        if (!Files.isReadable(cpuinfo)) return null;
        try (var lines = Files.lines(cpuinfo)) {
            return lines.filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).strip())
                    .findFirst().orElse(null);
        } catch (IOException | java.io.UncheckedIOException e) {
            return null;
        }
    }

    String describe() {
        return osName + " " + osVersion + " " + arch + ", " + (cpuModel != null ? cpuModel + ", " : "") + cores + " cores";
    }
}
