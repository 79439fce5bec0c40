package dev.forkpoint.bench.soak;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Java heap in use right after a full collection: one {@code jcmd PID -f FILE} run (one attach, ~0.3 s of CPU)
 * executing {@code GC.run} (a System.gc(): with ParallelGC a full, stop-the-world collection) and then
 * {@code GC.heap_info}, whose top-level generation lines ({@code PSYoungGen total …K, used …K}, {@code ParOldGen …};
 * G1's single {@code garbage-first heap} line) are summed. The collection itself perturbs the server a little, which is
 * why the soak does it every {@code --heap-every} seconds only.
 */
final class HeapAfterGc {
    private static final Pattern GENERATION = Pattern.compile("^(\\S[^\\n]*?)\\s+total (\\d+)K, used (\\d+)K", Pattern.MULTILINE);

    private final Path jcmd;
    private final Path commands;

    HeapAfterGc(Path scratchDir) throws IOException {
        this.jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        this.commands = scratchDir.resolve("jcmd-heap-after-gc.txt");
        Files.writeString(commands, "GC.run\nGC.heap_info\n");
    }

    boolean available() { return Files.isExecutable(jcmd); }

    /** KiB used after the collection and KiB committed to the heap; -1, -1 when jcmd failed. */
    record Heap(long usedKib, long committedKib) {
        static final Heap UNKNOWN = new Heap(-1, -1);
    }

    /** The heap right after a full collection, or {@link Heap#UNKNOWN} (the process is gone or does not answer in 20 s). */
    Heap measure(long pid) {
        try {
            Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "-f", commands.toString()).redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Heap.UNKNOWN;
            }
            return p.exitValue() == 0 ? parse(new String(out, StandardCharsets.UTF_8)) : Heap.UNKNOWN;
        } catch (IOException e) {
            return Heap.UNKNOWN;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Heap.UNKNOWN;
        }
    }

    /** Sums of "used NK" and "total NK" over GC.heap_info's top-level heap lines (Metaspace and class space excluded). */
    static Heap parse(String heapInfo) {
        long used = 0, total = 0;
        boolean any = false;
        Matcher m = GENERATION.matcher(heapInfo);
        while (m.find()) {
            String name = m.group(1).trim();
            if (name.startsWith("Metaspace") || name.startsWith("class space")) continue;
            total += Long.parseLong(m.group(2));
            used += Long.parseLong(m.group(3));
            any = true;
        }
        return any ? new Heap(used, total) : Heap.UNKNOWN;
    }
}
