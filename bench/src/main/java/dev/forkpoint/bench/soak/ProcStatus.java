package dev.forkpoint.bench.soak;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What Linux says about a process: resident memory ({@code VmRSS} of {@code /proc/PID/status}, KiB), its thread count
 * ({@code Threads}) and its open file descriptors (the entries of {@code /proc/PID/fd}, sockets included).
 */
record ProcStatus(long rssKib, int threads, int fds) {

    /** The process's status, or null when it is gone or /proc cannot be read (not Linux). */
    static ProcStatus of(long pid) {
        Path dir = Path.of("/proc", Long.toString(pid));
        try {
            long rss = -1;
            int threads = -1;
            for (String line : Files.readAllLines(dir.resolve("status"))) {
                if (line.startsWith("VmRSS:")) rss = Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
                else if (line.startsWith("Threads:")) threads = Integer.parseInt(line.substring(8).trim());
            }
            int fds;
            try (Stream<Path> s = Files.list(dir.resolve("fd"))) {
                fds = (int) s.count();
            }
            return rss < 0 ? null : new ProcStatus(rss, threads, fds);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
