package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.GenerationEvent;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationStream;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.Scheduler;
import dev.forkpoint.engine.SchedulerOptions;
import dev.forkpoint.sampling.SamplingOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code forkpoint bench concurrency}: the scheduler under the load of the serving scenario. A shared system
 * prompt (cached after a warm-up request), distinct user turns, a fixed number of output tokens; for each concurrency
 * level, that many client threads send requests back to back until the samples are taken. Reports per level the TTFT
 * (submission to first text) p50/p95, the per-stream decode rate and the aggregate output rate (all tokens over the
 * level's wall time), then the p95 TTFT ratio and the aggregate decode ratio of the highest level over the first.
 * In-process (no HTTP): it measures the scheduler and engine; `forkpoint probe` (later) measures a server.
 */
@Command(name = "concurrency", mixinStandardHelpOptions = true,
        description = "TTFT and throughput of concurrent streams through the scheduler (shared prefix, distinct user turns).")
final class ConcurrencyCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "the GGUF file (a `bench generate` model: one token per ASCII character) or an MLX folder converted from one")
    Path model;

    @Option(names = "--threads", defaultValue = "2", description = "engine threads (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--concurrency", defaultValue = "1,4", split = ",", description = "concurrent streams per level (default: ${DEFAULT-VALUE})")
    int[] concurrency;

    @Option(names = "--samples", defaultValue = "24", description = "requests per level (default: ${DEFAULT-VALUE})")
    int samples;

    @Option(names = "--shared-prefix-tokens", defaultValue = "2000", description = "shared system prompt (default: ${DEFAULT-VALUE})")
    int prefixTokens;

    @Option(names = "--prompt-tokens", defaultValue = "100", description = "distinct user turn per request (default: ${DEFAULT-VALUE})")
    int userTokens;

    @Option(names = "--max-tokens", defaultValue = "64", description = "output tokens per request (default: ${DEFAULT-VALUE})")
    int maxTokens;

    @Option(names = "--step-tokens", defaultValue = "512", description = "scheduler token budget per step (default: ${DEFAULT-VALUE})")
    int stepTokens;

    @Option(names = "--step-ms", defaultValue = "0",
            description = "scheduler time bound of a step with decoding streams; 0: four decode passes, -1: none (default: ${DEFAULT-VALUE})")
    int stepMillis;

    /** One request as a client saw it. */
    record Sample(long ttftNanos, long decodeNanos, int tokens, double[] gapsMillis) {}

    /** One concurrency level. */
    record Level(int concurrency, List<Sample> samples, long wallNanos) {
        double[] ttftMillis() { return samples.stream().mapToDouble(s -> s.ttftNanos() / 1e6).toArray(); }
        /** Every gap between two text events of one stream (the inter-token latency a reader sees). */
        double[] gapsMillis() { return samples.stream().flatMapToDouble(s -> Arrays.stream(s.gapsMillis())).toArray(); }
        double aggregateTokensPerSecond() { return samples.stream().mapToInt(Sample::tokens).sum() * 1e9 / wallNanos; }
        /** Decode throughput of all streams together: the median stream's decode rate times the streams. */
        double aggregateDecodeTokensPerSecond() { return Summary.of(streamDecodeTokensPerSecond()).median() * concurrency; }
        double[] streamDecodeTokensPerSecond() {
            return samples.stream().filter(s -> s.tokens() > 1).mapToDouble(s -> (s.tokens() - 1) * 1e9 / s.decodeNanos()).toArray();
        }
    }

    @Override
    public Integer call() throws Exception {
        if (!Files.exists(model)) throw new InvalidInputException("model " + model + " does not exist");
        if (samples < 1 || concurrency.length == 0 || Arrays.stream(concurrency).anyMatch(c -> c < 1) || maxTokens < 2) {
            throw new InvalidInputException("--samples and each --concurrency must be ≥ 1, --max-tokens ≥ 2");
        }
        int maxStreams = Arrays.stream(concurrency).max().orElseThrow();
        int numCtx = (prefixTokens + userTokens + maxTokens + 16 + 255) / 256 * 256;
        // room for every stream's worst case plus the cached shared prefix (the derived budget counts sequences of
        // the default num_ctx, 4096 for this shape; committed only as pages are used)
        int sequences = (maxStreams + 2) * ((numCtx + 4095) / 4096);
        String system = PromptText.of(prefixTokens - 1, 7) + "\n";   // + BOS = prefixTokens tokens
        try (LoadedModel loaded = LoadedModel.load(model, threads, LoadProgress.NONE, EngineOptions.defaults().withSequences(sequences));
             Scheduler scheduler = new Scheduler(loaded, SchedulerOptions.defaults().withParallel(maxStreams).withStepTokens(stepTokens).withStepMillis(stepMillis))) {
            System.out.printf(Locale.ROOT, "model %s, %d threads, shared prefix %d tokens, user turn %d tokens, %d output tokens, %d samples per level%n",
                    model.getFileName(), threads, prefixTokens, userTokens, maxTokens, samples);
            run(scheduler, system, numCtx, 1, Math.min(2, samples), 1_000_000);   // warm-up: caches the shared prefix, JIT
            List<Level> levels = new ArrayList<>();
            int seedBase = 0;
            for (int c : concurrency) {
                Level level = run(scheduler, system, numCtx, c, samples, seedBase += 10_000);
                levels.add(level);
                Summary ttft = Summary.of(level.ttftMillis());
                double[] gaps = level.gapsMillis();
                System.out.printf(Locale.ROOT, "concurrency %d: TTFT p50 %.0f ms p95 %.0f ms (min %.0f max %.0f); inter-token p50 %.0f ms p95 %.0f ms max %.0f ms; stream decode %.2f tok/s (median), aggregate decode %.2f tok/s; all output over wall time %.2f tok/s%n",
                        c, ttft.median(), percentile(level.ttftMillis(), 95), ttft.min(), ttft.max(),
                        gaps.length == 0 ? 0 : percentile(gaps, 50), gaps.length == 0 ? 0 : percentile(gaps, 95), gaps.length == 0 ? 0 : Arrays.stream(gaps).max().orElse(0),
                        Summary.of(level.streamDecodeTokensPerSecond()).median(), level.aggregateDecodeTokensPerSecond(),
                        level.aggregateTokensPerSecond());
            }
            if (levels.size() > 1) {
                Level first = levels.getFirst(), last = levels.getLast();
                System.out.printf(Locale.ROOT, "p95 TTFT ratio %d vs %d streams: %.2f (goal ≤ 2.0, alarm > 2.8); aggregate decode ratio: %.2f (goal ≥ 2.5)%n",
                        last.concurrency(), first.concurrency(), percentile(last.ttftMillis(), 95) / percentile(first.ttftMillis(), 95),
                        last.aggregateDecodeTokensPerSecond() / first.aggregateDecodeTokensPerSecond());
            }
        }
        return 0;
    }

    /** {@code streams} client threads send {@code total} requests between them, each waiting for its previous one. */
    private Level run(Scheduler scheduler, String system, int numCtx, int streams, int total, int seedBase) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        List<Sample> out = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        long start = System.nanoTime();
        Thread[] clients = new Thread[streams];
        for (int t = 0; t < streams; t++) {
            clients[t] = Thread.ofPlatform().name("client-" + t).start(() -> {
                for (int i; (i = next.getAndIncrement()) < total; ) {
                    String prompt = system + PromptText.of(userTokens, seedBase + i);
                    try {
                        out.add(request(scheduler, new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(maxTokens),
                                numCtx, GenerationRequest.NUM_BATCH_DEFAULT)));
                    } catch (Throwable e) {
                        errors.add(e);
                        return;
                    }
                }
            });
        }
        for (Thread c : clients) c.join();
        if (!errors.isEmpty()) throw new IllegalStateException("a request failed: " + errors.getFirst(), errors.getFirst());
        return new Level(streams, List.copyOf(out), System.nanoTime() - start);
    }

    private static Sample request(Scheduler scheduler, GenerationRequest request) throws InterruptedException {
        long submitted = System.nanoTime();
        long first = 0, lastText = 0;
        int tokens = 0;
        List<Double> gaps = new ArrayList<>();
        try (GenerationStream stream = scheduler.submit(request)) {
            for (GenerationEvent e; (e = stream.next()) != null; ) {
                switch (e) {
                    case GenerationEvent.Text t -> {
                        long now = System.nanoTime();
                        if (first == 0) first = now;
                        else gaps.add((now - lastText) / 1e6);
                        lastText = now;
                    }
                    case GenerationEvent.Done d -> tokens = d.result().generatedIds().length;
                    case GenerationEvent.Failed f -> throw f.error();
                    case GenerationEvent.Started s -> { }
                }
            }
        }
        return new Sample(first - submitted, lastText - first, tokens, gaps.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** Nearest-rank percentile (the smallest value with at least p % of the values at or below it). */
    static double percentile(double[] values, double p) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(p / 100 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
