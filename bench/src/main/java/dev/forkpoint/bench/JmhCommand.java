package dev.forkpoint.bench;

import dev.forkpoint.bench.jmh.WorkPerCall;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint bench jmh [JMH args]}: hands every argument to JMH's own command line (try {@code -h}, {@code -l}),
 * then prints, for the benchmarks whose work per call is known ({@link WorkPerCall}), the score as GB/s and GFLOP/s.
 */
@Command(name = "jmh", description = "Run the JMH benchmarks in this jar; all arguments go to JMH (-l lists them, -h helps). "
        + "After JMH's table, prints GB/s and GFLOP/s (MB/s of text for the tokenizer) for each result.")
final class JmhCommand implements Callable<Integer> {
    @Unmatched
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        String[] argv = args.toArray(String[]::new);
        CommandLineOptions options;
        try {
            options = new CommandLineOptions(argv);
        } catch (CommandLineOptionException e) {
            System.err.println("error: " + e.getMessage());
            return 2;
        }
        if (options.shouldHelp() || options.shouldList() || options.shouldListWithParams() || options.shouldListProfilers()
                || options.shouldListResultFormats()) {
            org.openjdk.jmh.Main.main(argv);
            return 0;
        }
        Collection<RunResult> results = new Runner(options).run();
        printRates(results, System.out);
        printBandwidthShares(results, System.out);
        return 0;
    }

    /**
     * For AttentionBench results: this machine's read bandwidth at each thread count they ran ({@link MachineInfo#readBandwidth},
     * measured now, after the benchmarks) and each result's KV read rate as a share of it.
     */
    static void printBandwidthShares(Collection<RunResult> results, PrintStream out) {
        java.util.Map<Integer, Double> bandwidth = new java.util.TreeMap<>();
        List<String> lines = new ArrayList<>();
        for (RunResult r : results) {
            BenchmarkParams p = r.getParams();
            String[] name = p.getBenchmark().split("\\.");
            if (!name[name.length - 2].equals("AttentionBench")) continue;
            Optional<WorkPerCall> work = WorkPerCall.of("AttentionBench", p::getParam);
            if (work.isEmpty()) continue;
            int threads = Integer.parseInt(p.getParam("threads"));
            double bw = bandwidth.computeIfAbsent(threads, t -> MachineInfo.readBandwidth(t, 5));
            double gbs = work.get().gigabytesPerSecond(secondsPerCall(p, r.getPrimaryResult().getScore()));
            StringBuilder params = new StringBuilder();
            for (String key : p.getParamsKeys()) params.append(key).append('=').append(p.getParam(key)).append(' ');
            lines.add(String.format(Locale.ROOT, "%-48s %10.2f GB/s of KV  %6.1f %% of %.1f GB/s", params.toString().trim(), gbs,
                    100 * gbs / bw, bw));
        }
        if (lines.isEmpty()) return;
        out.println();
        out.println("Machine read bandwidth (MachineInfo.readBandwidth: 1 GiB streamed by each thread count, best of 5): "
                + bandwidth.entrySet().stream().map(e -> String.format(Locale.ROOT, "%d thread%s %.1f GB/s", e.getKey(),
                e.getKey() == 1 ? "" : "s", e.getValue())).collect(java.util.stream.Collectors.joining(", ")));
        out.println("AttentionBench KV read rate as a share of it:");
        lines.forEach(out::println);
    }

    /** One line per result with a known work per call: time per call, GB/s, GFLOP/s. */
    static void printRates(Collection<RunResult> results, PrintStream out) {
        List<String> lines = new ArrayList<>();
        for (RunResult r : results) {
            BenchmarkParams p = r.getParams();
            String[] name = p.getBenchmark().split("\\.");
            String simple = name[name.length - 2];
            Optional<WorkPerCall> work = WorkPerCall.of(simple, p::getParam);
            if (work.isEmpty()) continue;
            double seconds = secondsPerCall(p, r.getPrimaryResult().getScore());
            StringBuilder params = new StringBuilder();
            for (String key : p.getParamsKeys()) params.append(key).append('=').append(p.getParam(key)).append(' ');
            WorkPerCall w = work.get();
            double gflops = w.gigaflopsPerSecond(seconds);
            double gbs = w.gigabytesPerSecond(seconds);
            String rate = gbs >= 1 ? String.format(Locale.ROOT, "%.2f GB/s", gbs) : String.format(Locale.ROOT, "%.1f MB/s", gbs * 1000);
            lines.add(String.format(Locale.ROOT, "%-32s %-48s %12.2f %12s %10s  %s", simple + "." + name[name.length - 1],
                    params.toString().trim(), seconds * 1e6, rate,
                    Double.isNaN(gflops) ? "-" : String.format(Locale.ROOT, "%.2f", gflops), w.bytesWhat()));
        }
        if (lines.isEmpty()) return;
        out.println();
        out.println("Rates (work per call from the parameters: bytes per call / time, flops per call / time; 1 GB = 10⁹ bytes):");
        out.printf(Locale.ROOT, "%-32s %-48s %12s %12s %10s  %s%n", "benchmark", "params", "µs/call", "bytes/s", "GFLOP/s", "bytes of");
        lines.forEach(out::println);
    }

    /** Seconds per call from a score in the benchmark's mode and time unit. */
    static double secondsPerCall(BenchmarkParams p, double score) {
        double unitSeconds = p.getTimeUnit().toNanos(1) / 1e9;
        return switch (p.getMode()) {
            case Throughput -> unitSeconds / score;
            default -> score * unitSeconds;
        };
    }
}
