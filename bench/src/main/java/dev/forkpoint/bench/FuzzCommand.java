package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.fuzz.FuzzTargets;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code forkpoint bench fuzz}: runs the suite's fuzz targets ({@link FuzzTargets}, runner-core's {@code @FuzzTest}s,
 * carried in this jar) in Jazzer's fuzzing mode, one child JVM per target for its share of {@code --minutes}, and
 * prints executions, new corpus entries and findings per target and in total. Each child starts from the committed
 * seed corpus (read only) and the corpus earlier runs grew (in {@code --out}); crashing, hanging and out-of-memory
 * inputs go to {@code --out}/findings/TARGET. Exit status 1 when any target found something or did not run to its
 * end, 2 for bad arguments.
 */
@Command(name = "fuzz", mixinStandardHelpOptions = true,
        description = "Coverage-guided fuzzing of the parsers, tokenizers, templates, API requests and sampler (Jazzer).")
final class FuzzCommand implements Callable<Integer> {
    /** Seconds a child needs to start the JVM, install Jazzer's agent and load its target before fuzzing. */
    static final int STARTUP_SECONDS = 20;

    @Option(names = "--minutes", defaultValue = "10", description = "total fuzzing time, shared equally by the targets (default: ${DEFAULT-VALUE})")
    double minutes;

    @Option(names = "--target", description = "fuzz only these targets (repeatable; names from --list, or Class#method)")
    List<String> targets = new ArrayList<>();

    @Option(names = "--out", description = "corpus, findings and logs (default: bench/target/fuzz in the checkout, else ./forkpoint-fuzz)")
    Path out;

    @Option(names = "--seeds", description = "the committed seed corpus root (default: runner-core/src/test/resources in the checkout)")
    Path seeds;

    @Option(names = "--timeout", defaultValue = "20", description = "seconds one input may run before it counts as a hang (default: ${DEFAULT-VALUE})")
    int timeout;

    @Option(names = "--keep-going", defaultValue = "10", description = "distinct findings a target may collect before it stops (default: ${DEFAULT-VALUE})")
    int keepGoing;

    @Option(names = "--heap", defaultValue = "2g", description = "each child's -Xmx (default: ${DEFAULT-VALUE})")
    String heap;

    @Option(names = "--list", description = "list the targets and exit")
    boolean list;

    @Override
    public Integer call() throws Exception {
        if (list) {
            for (FuzzTargets.Target t : FuzzTargets.ALL) System.out.printf(Locale.ROOT, "%-17s %s#%s: %s%n", t.name(), t.className(), t.method(), t.description());
            return 0;
        }
        if (!(minutes > 0)) throw new InvalidInputException("--minutes must be positive, got " + minutes);
        if (timeout < 1) throw new InvalidInputException("--timeout must be at least 1 second, got " + timeout);
        if (keepGoing < 1) throw new InvalidInputException("--keep-going must be at least 1, got " + keepGoing);
        List<FuzzTargets.Target> chosen = new ArrayList<>();
        for (String name : targets) {
            chosen.add(FuzzTargets.named(name).orElseThrow(() -> new InvalidInputException("--target " + name
                    + " is not a fuzz target; one of: " + String.join(", ", FuzzTargets.ALL.stream().map(FuzzTargets.Target::name).toList()))));
        }
        if (chosen.isEmpty()) chosen.addAll(FuzzTargets.ALL);
        Path checkout = checkout();
        Path outDir = (out != null ? out : checkout != null ? checkout.resolve("bench/target/fuzz") : Path.of("forkpoint-fuzz")).toAbsolutePath();
        Path seedRoot = seeds != null ? seeds : checkout != null ? checkout.resolve("runner-core/src/test/resources") : null;
        if (seeds != null && !Files.isDirectory(seeds)) throw new InvalidInputException("--seeds " + seeds + " is not a folder");

        long share = Math.round(minutes * 60 / chosen.size());
        long fuzzSeconds = Math.max(5, share - STARTUP_SECONDS);
        System.out.printf(Locale.ROOT, "fuzzing %d target%s for %d s each (%.1f minutes in all); corpus, findings and logs in %s%n",
                chosen.size(), chosen.size() == 1 ? "" : "s", fuzzSeconds, minutes, outDir);
        if (seedRoot == null) System.out.println("no checkout found: starting from the corpus in " + outDir + " alone (give --seeds)");
        System.out.flush();

        List<FuzzOutcome> outcomes = new ArrayList<>();
        for (FuzzTargets.Target t : chosen) {
            FuzzOutcome o = run(t, outDir, seedRoot == null ? null : seedRoot.resolve(t.inputsPath()), fuzzSeconds);
            outcomes.add(o);
            System.out.printf(Locale.ROOT, "  %-17s %,14d executions %6d new %4d findings%s%n", t.name(), o.executions(), o.newCorpus(),
                    o.findings(), o.note() == null ? "" : "  " + o.note());
            System.out.flush();
        }
        printTable(outcomes);
        long failed = outcomes.stream().filter(FuzzOutcome::failed).count();
        if (failed > 0) {
            System.out.println(failed + " target" + (failed == 1 ? "" : "s") + " failed; findings are in " + outDir.resolve("findings")
                    + ", logs in " + outDir.resolve("logs") + " (copy a finding into the target's seed folder to make it a regression test)");
            return 1;
        }
        System.out.println("no findings");
        return 0;
    }

    /**
     * The test data folder ({@code ../shared} beside the project, looked for upwards from where this command runs), for
     * the children: they run in the output folder, which may lie anywhere. Empty when there is none.
     */
    static String sharedFolder() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolveSibling("shared");
            if (Files.isDirectory(candidate.resolve("models"))) return candidate.toString();
        }
        return "";
    }

    /** Runs one target in a child JVM and reads what it did. */
    FuzzOutcome run(FuzzTargets.Target t, Path outDir, Path seedDir, long seconds) throws IOException, InterruptedException {
        Path corpus = Files.createDirectories(outDir.resolve("corpus").resolve(t.name()));
        Path findings = Files.createDirectories(outDir.resolve("findings").resolve(t.name()));
        Path log = Files.createDirectories(outDir.resolve("logs")).resolve(t.name() + ".log");
        int corpusBefore = count(corpus, "");
        int findingsBefore = findingFiles(findings);
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx" + heap, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-XX:+EnableDynamicAgentLoading",
                "-XX:+UseParallelGC", "-Dforkpoint.shared=" + sharedFolder(), "-cp", System.getProperty("java.class.path"),
                "com.code_intelligence.jazzer.Jazzer",
                "--target_class=" + t.className(), "--target_method=" + t.method(),
                "--instrumentation_includes=dev.forkpoint.**:com.fasterxml.jackson.**:com.hubspot.jinjava.**",
                // tokenizer files carry regular expressions by design (see runner-core's junit-platform.properties)
                "--disabled_hooks=com.code_intelligence.jazzer.sanitizers.RegexInjection",
                "--keep_going=" + keepGoing, "--reproducer_path=" + findings, corpus.toString()));
        if (seedDir != null && Files.isDirectory(seedDir)) cmd.add(seedDir.toString());
        cmd.addAll(List.of("-max_total_time=" + seconds, "-timeout=" + timeout, "-rss_limit_mb=0",
                "-artifact_prefix=" + findings + "/", "-print_final_stats=1"));
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).directory(outDir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        boolean exited = p.waitFor(seconds + STARTUP_SECONDS + 120, TimeUnit.SECONDS);
        if (!exited) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor();
        }
        double elapsed = (System.nanoTime() - t0) / 1e9;
        String text = Files.readString(log, StandardCharsets.ISO_8859_1);
        int newFindings = findingFiles(findings) - findingsBefore;
        boolean completed = exited && p.exitValue() == 0;
        String note = !exited ? "killed: still running " + (seconds + STARTUP_SECONDS + 120) + " s after start"
                : newFindings > 0 ? FuzzOutcome.firstException(text)
                : p.exitValue() != 0 ? "exit status " + p.exitValue() + " (see " + log + ")" : null;
        return new FuzzOutcome(t.name(), FuzzOutcome.executions(text), count(corpus, "") - corpusBefore,
                newFindings, elapsed, completed, note);
    }

    static void printTable(List<FuzzOutcome> outcomes) {
        System.out.println();
        System.out.printf(Locale.ROOT, "%-17s %15s %10s %11s %9s %9s%n", "target", "executions", "exec/s", "new corpus", "findings", "seconds");
        long executions = 0, corpus = 0, findings = 0;
        double seconds = 0;
        for (FuzzOutcome o : outcomes) {
            System.out.printf(Locale.ROOT, "%-17s %,15d %,10.0f %,11d %9d %9.0f%s%n", o.target(), o.executions(),
                    o.executions() / Math.max(1e-9, o.seconds()), o.newCorpus(), o.findings(), o.seconds(), o.completed() ? "" : "  (did not complete)");
            executions += o.executions();
            corpus += o.newCorpus();
            findings += o.findings();
            seconds += o.seconds();
        }
        System.out.printf(Locale.ROOT, "%-17s %,15d %,10.0f %,11d %9d %9.0f%n", "total", executions, executions / Math.max(1e-9, seconds),
                corpus, findings, seconds);
    }

    /** The checkout this jar was built in (…/bench/target/forkpoint-bench.jar), or null. */
    static Path checkout() {
        String cp = System.getProperty("java.class.path");
        if (cp == null || cp.contains(java.io.File.pathSeparator)) return null;
        Path jar = Path.of(cp).toAbsolutePath().normalize();
        Path root = jar.getParent() == null || jar.getParent().getParent() == null ? null : jar.getParent().getParent().getParent();
        return root != null && Files.isDirectory(root.resolve("runner-core/src/test/resources")) ? root : null;
    }

    private static int count(Path dir, String prefix) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return (int) s.filter(p -> p.getFileName().toString().startsWith(prefix)).count();
        }
    }

    /** Inputs libFuzzer and Jazzer saved: crash-, timeout-, oom- and slow-unit- files. */
    private static int findingFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return (int) s.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("crash-") || n.startsWith("timeout-") || n.startsWith("oom-") || n.startsWith("slow-unit-"))
                    .count();
        }
    }
}
