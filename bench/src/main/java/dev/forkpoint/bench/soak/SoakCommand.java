package dev.forkpoint.bench.soak;

import dev.forkpoint.InvalidInputException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint bench soak}: soak and chaos benchmark of {@code forkpoint serve}, run as a child process. See
 * {@link SoakRun} for the phases and bench/README.md for what is measured and checked.
 */
@Command(name = "soak", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Soak and chaos benchmark of `forkpoint serve` (a child process): N client streams for M minutes over every API with random "
                + "disconnects and injected client faults, sampling RSS, heap after GC, KV pages, open files and threads; then kill -9 mid-stream, "
                + "restart, and check greedy output and the disk. Exit status 1 when an invariant fails.")
public final class SoakCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--model", description = "GGUF model the server loads (default: ../shared/models/stories260K.gguf beside the project)")
    Path model;

    @Option(names = "--streams", defaultValue = "8", description = "concurrent client streams (default: ${DEFAULT-VALUE})")
    int streams;

    @Option(names = "--minutes", defaultValue = "10", description = "length of the soak phase in minutes, fractions allowed (default: ${DEFAULT-VALUE})")
    double minutes;

    @Option(names = "--seed", defaultValue = "42", description = "seed of the mix of requests, faults and disconnects (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--out", description = "output folder: samples.csv, requests.csv, faults.csv, summary.txt/json, server logs (default: ./soak-<timestamp>)")
    Path out;

    @Option(names = "--port", defaultValue = "0", description = "server port; 0 = a free one (default: ${DEFAULT-VALUE})")
    int port;

    @Option(names = "--parallel", defaultValue = "4", description = "the server's --parallel (default: ${DEFAULT-VALUE})")
    int parallel;

    @Option(names = "--threads", description = "the server's --threads (default: the server's)")
    Integer threads;

    @Option(names = "--api-key", description = "key the server requires (default: a random one; 'none' for no key)")
    String apiKey;

    @Option(names = "--max-body-bytes", description = "the server's --max-body-bytes (default: the server's, 32 MiB)")
    Long maxBodyBytes;

    @Option(names = "--server-jar", description = "runnable jar of the server (default: runner-core/target/forkpoint.jar when run from the bench jar, else this JVM's class path)")
    Path serverJar;

    @Option(names = "--faults", defaultValue = "all", description = "comma-separated faults for the matrix and the mix, 'all' or 'none' (default: ${DEFAULT-VALUE}); known: "
            + "huge-max-tokens, zero-max-tokens, negative-max-tokens, huge-num-ctx, bad-json, wrong-types, empty-body, unknown-model, wrong-api-key, "
            + "missing-api-key, oversized-body, truncated-body, malformed-chunked, stalled-body, stalled-reader, bad-host, missing-host")
    String faults;

    @Option(names = "--fault-rate", defaultValue = "0.15", description = "share of stream actions that inject a fault (default: ${DEFAULT-VALUE})")
    double faultRate;

    @Option(names = "--disconnect-rate", defaultValue = "0.2", description = "share of stream actions whose client goes away mid-answer (default: ${DEFAULT-VALUE})")
    double disconnectRate;

    @Option(names = "--reference-rate", defaultValue = "0.05", description = "share of stream actions that repeat a greedy reference (default: ${DEFAULT-VALUE})")
    double referenceRate;

    @Option(names = "--max-tokens", defaultValue = "64", description = "largest token limit of a well-formed request (default: ${DEFAULT-VALUE})")
    int maxTokens;

    @Option(names = "--think-ms", defaultValue = "100", description = "a stream waits 0 to this many ms between requests (default: ${DEFAULT-VALUE})")
    int thinkMs;

    @Option(names = "--deadline", defaultValue = "30", description = "seconds without a complete answer that make a hang (default: ${DEFAULT-VALUE})")
    double deadline;

    @Option(names = "--matrix-deadline", defaultValue = "10", description = "the same for the fault matrix (default: ${DEFAULT-VALUE})")
    double matrixDeadline;

    @Option(names = "--stall-seconds", defaultValue = "20", description = "how long stalled clients hold on; a server that has not answered a stalled body by then hangs (default: ${DEFAULT-VALUE})")
    double stallSeconds;

    @Option(names = "--stall-storm", defaultValue = "300", description = "stalled bodies held at once in the stall storm; 0 = no storm (default: ${DEFAULT-VALUE})")
    int storm;

    @Option(names = "--pause-seconds", defaultValue = "3", description = "kill -STOP the server this long in the middle of the soak; 0 = no pause (default: ${DEFAULT-VALUE})")
    double pauseSeconds;

    @Option(names = "--sample-seconds", defaultValue = "5", description = "seconds between samples (default: ${DEFAULT-VALUE})")
    double sampleSeconds;

    @Option(names = "--heap-every", defaultValue = "30", description = "seconds between heap-after-GC measurements (jcmd GC.run); 0 = never (default: ${DEFAULT-VALUE})")
    double heapEvery;

    @Option(names = "--heartbeat-seconds", defaultValue = "5", description = "seconds between the watchdog's one-token generations (default: ${DEFAULT-VALUE})")
    double heartbeatSeconds;

    @Option(names = "--version-deadline", defaultValue = "5", description = "seconds GET /api/version may take (default: ${DEFAULT-VALUE})")
    double versionDeadline;

    @Option(names = "--warmup", defaultValue = "0.2", description = "share of the soak before RSS growth is measured (default: ${DEFAULT-VALUE})")
    double warmup;

    @Option(names = "--rss-growth-limit-mb", defaultValue = "64", description = "largest RSS growth (MiB) after the warm-up (default: ${DEFAULT-VALUE})")
    double rssGrowthLimit;

    @Option(names = "--kill-load-seconds", defaultValue = "3", description = "seconds of load before the kill -9 (default: ${DEFAULT-VALUE})")
    double killLoadSeconds;

    @Option(names = "--after-restart-seconds", defaultValue = "5", description = "seconds of load after the restart (default: ${DEFAULT-VALUE})")
    double afterRestartSeconds;

    @Option(names = "--demo-crashes", defaultValue = "3", description = "kill -9 rounds while the server writes the built-in demo model; 0 = none (default: ${DEFAULT-VALUE})")
    int demoCrashes;

    @Option(names = "--cancel-probe-tokens", defaultValue = "1900", description = "num_predict of the cancellation probe's long generation; prompt + it must fit the server's num_ctx, 2048 (default: ${DEFAULT-VALUE})")
    int cancelTokens;

    @Option(names = "--start-timeout", defaultValue = "120", description = "seconds the server may take to listen (default: ${DEFAULT-VALUE})")
    double startTimeout;

    @Option(names = "--no-matrix", description = "skip the fault matrix")
    boolean noMatrix;

    @Option(names = "--no-recover", description = "do not restart a wedged or dead server (the rest of the run then sees it so)")
    boolean noRecover;

    @Option(names = "--keep-wedging-faults", description = "keep faults that wedged the server in the matrix in the soak's mix")
    boolean keepWedging;

    @Override
    public Integer call() throws IOException {
        Path root = projectRoot();
        Path m = model != null ? model : root == null ? null : root.resolve("../shared/models/stories260K.gguf").normalize();
        if (m == null || !Files.isRegularFile(m)) throw new InvalidInputException("no model file " + (m == null ? "(give --model)" : m + " (give --model)"));
        Path jar = serverJar;
        if (jar == null && root != null && fromJar()) {
            Path j = root.resolve("runner-core/target/forkpoint.jar");
            if (Files.isRegularFile(j)) jar = j;
        }
        if (jar != null && !Files.isRegularFile(jar)) throw new InvalidInputException("--server-jar: no file " + jar);
        if (streams < 1) throw new InvalidInputException("--streams must be at least 1");
        if (!(minutes > 0)) throw new InvalidInputException("--minutes must be positive");
        if (faultRate < 0 || disconnectRate < 0 || referenceRate < 0 || faultRate + disconnectRate + referenceRate > 1) {
            throw new InvalidInputException("--fault-rate, --disconnect-rate and --reference-rate must be ≥ 0 and add up to at most 1");
        }
        if (maxTokens < 1) throw new InvalidInputException("--max-tokens must be at least 1");
        if (warmup < 0 || warmup >= 1) throw new InvalidInputException("--warmup must be in [0, 1)");
        String key = apiKey == null ? "soak-" + HexFormat.of().toHexDigits(new Random(seed).nextLong()) : apiKey.equals("none") ? null : apiKey;
        Path dir = out != null ? out : Path.of("soak-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        SoakSettings settings = new SoakSettings(m.toAbsolutePath(), jar == null ? null : jar.toAbsolutePath(), streams, seconds(minutes * 60), seed,
                dir.toAbsolutePath(), port, parallel, threads, key, maxBodyBytes, parseFaults(faults), faultRate, disconnectRate, referenceRate, maxTokens,
                thinkMs, seconds(deadline), seconds(matrixDeadline), seconds(stallSeconds), storm, seconds(pauseSeconds), seconds(sampleSeconds),
                seconds(heapEvery), seconds(heartbeatSeconds), seconds(versionDeadline), warmup, rssGrowthLimit, seconds(killLoadSeconds),
                seconds(afterRestartSeconds), demoCrashes, !noMatrix, !noRecover, !keepWedging, seconds(startTimeout), cancelTokens);
        return new SoakRun(settings, spec.commandLine().getOut(), spec.commandLine().getErr()).run();
    }

    static List<Fault> parseFaults(String list) {
        String l = list.trim();
        if (l.equals("all")) return Arrays.asList(Fault.values());
        if (l.equals("none") || l.isEmpty()) return List.of();
        List<Fault> out = new ArrayList<>();
        for (String name : l.split(",")) {
            try {
                Fault f = Fault.byLabel(name);
                if (!out.contains(f)) out.add(f);
            } catch (IllegalArgumentException e) {
                throw new InvalidInputException("--faults: " + e.getMessage());
            }
        }
        return out;
    }

    private static Duration seconds(double s) {
        if (s < 0 || Double.isNaN(s)) throw new InvalidInputException("durations must be ≥ 0, got " + s);
        return Duration.ofMillis(Math.round(s * 1000));
    }

    /** Whether this class was loaded from a jar (the bench jar) rather than from a classes folder. */
    private static boolean fromJar() {
        Path loc = codeLocation();
        return loc != null && loc.toString().endsWith(".jar");
    }

    /** The project root: two folders above bench/target/(classes | forkpoint-bench.jar), or null. */
    static Path projectRoot() {
        Path loc = codeLocation();
        if (loc == null) return null;
        Path target = loc.getParent();
        if (target == null || target.getParent() == null || target.getParent().getParent() == null) return null;
        return target.getParent().getParent();
    }

    private static Path codeLocation() {
        try {
            var src = SoakCommand.class.getProtectionDomain().getCodeSource();
            return src == null ? null : Path.of(src.getLocation().toURI()).toAbsolutePath();
        } catch (URISyntaxException | RuntimeException e) {
            return null;
        }
    }
}
