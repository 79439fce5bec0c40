package dev.forkpoint.bench;

import dev.forkpoint.backend.choice.Platform;

import java.nio.file.Path;

/**
 * Describes this machine for a report: CPU model from /proc/cpuinfo (sysctl on macOS), logical CPUs, memory, OS and
 * JVM; and its memory read bandwidth ({@link #readBandwidth}), what a memory-bound kernel's rate is compared with.
 */
public final class MachineInfo {
    private MachineInfo() {}

    /** Bytes each measurement streams: far beyond any last-level cache. */
    static final long BANDWIDTH_BYTES = 1L << 30;

    /**
     * This machine's read bandwidth in GB/s (10⁹ bytes) at {@code threads} threads: a 1 GiB off-heap buffer (touched
     * first) read once per pass as one contiguous part per thread, with 512-bit float vector loads into four
     * independent sums (the loads, not the adds, bound the loop), the best of {@code passes} passes after one warm-up.
     * The way a streaming kernel reads memory at its best, so a kernel's bytes per second over it is its share of
     * what this machine can deliver.
     */
    public static double readBandwidth(int threads, int passes) {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
            java.lang.foreign.MemorySegment buffer = arena.allocate(BANDWIDTH_BYTES, 4096);
            buffer.fill((byte) 1);
            long part = BANDWIDTH_BYTES / threads / 256 * 256;
            double best = 0;
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
            try {
                for (int pass = -1; pass < passes; pass++) {
                    java.util.List<java.util.concurrent.Callable<Float>> work = new java.util.ArrayList<>();
                    for (int t = 0; t < threads; t++) {
                        java.lang.foreign.MemorySegment slice = buffer.asSlice(t * part, part);
                        work.add(() -> sum(slice));
                    }
                    long start = System.nanoTime();
                    float check = 0;
                    for (var f : pool.invokeAll(work)) check += f.get();
                    long nanos = System.nanoTime() - start;
                    if (check == 42.5f) System.out.print("");   // keeps the sums live
                    if (pass >= 0) best = Math.max(best, (double) part * threads / nanos);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Double.NaN;
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException(e.getCause());
            } finally {
                pool.shutdownNow();
            }
            return best;
        }
    }

    private static final jdk.incubator.vector.VectorSpecies<Float> S = jdk.incubator.vector.FloatVector.SPECIES_512;

    private static float sum(java.lang.foreign.MemorySegment m) {
        var order = java.nio.ByteOrder.nativeOrder();
        var a = jdk.incubator.vector.FloatVector.zero(S);
        var b = a;
        var c = a;
        var d = a;
        long step = S.vectorByteSize();
        for (long i = 0, n = m.byteSize() - 4 * step; i <= n; i += 4 * step) {
            a = a.add(jdk.incubator.vector.FloatVector.fromMemorySegment(S, m, i, order));
            b = b.add(jdk.incubator.vector.FloatVector.fromMemorySegment(S, m, i + step, order));
            c = c.add(jdk.incubator.vector.FloatVector.fromMemorySegment(S, m, i + 2 * step, order));
            d = d.add(jdk.incubator.vector.FloatVector.fromMemorySegment(S, m, i + 3 * step, order));
        }
        return a.add(b).add(c).add(d).reduceLanes(jdk.incubator.vector.VectorOperators.ADD);
    }

    static CompareReport.Machine current() {
        String cpu = Platform.cpuModel().orElse(System.getProperty("os.arch") + " (no CPU model name found)");
        long memKb = Platform.field(Path.of("/proc/meminfo"), "MemTotal", ':').map(v -> Long.parseLong(v.replace("kB", "").trim())).orElse(-1L);
        String distro = Platform.distribution().map(v -> v + ", ").orElse("");
        String os = distro + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch");
        String jvm = System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
        return new CompareReport.Machine(cpu, Runtime.getRuntime().availableProcessors(), memKb, os, jvm);
    }
}
