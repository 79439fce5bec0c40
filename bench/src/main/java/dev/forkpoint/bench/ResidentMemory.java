package dev.forkpoint.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The resident set size of this process, from {@code /proc/self/status} (Linux only). */
final class ResidentMemory {
    private ResidentMemory() {}

    /** VmRSS in kB, or -1 where /proc is not available. */
    static long selfKb() {
        return field("VmRSS:");
    }

    /** VmHWM (peak resident set) in kB, or -1. */
    static long peakKb() {
        return field("VmHWM:");
    }

    private static long field(String name) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(name)) return Long.parseLong(line.substring(name.length()).replace("kB", "").trim());
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
