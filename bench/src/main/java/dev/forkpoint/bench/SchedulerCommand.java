package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.GenerationStream;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.Scheduler;
import dev.forkpoint.engine.SchedulerOptions;
import dev.forkpoint.sampling.SamplingOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint bench scheduler}: aggregate decode throughput through the {@link Scheduler} with 1 stream and
 * with N concurrent streams (distinct prompts, greedy, fixed num_predict, no cache reuse), and their ratio.
 * Aggregate tok/s = decode tokens of all streams (each stream's first token comes from prefill and is not counted)
 * / the longest decode phase among the streams (each result's generationNanos), so that prefill is excluded.
 */
@Command(name = "scheduler", mixinStandardHelpOptions = true,
        description = "Aggregate decode tok/s through the scheduler at 1 vs N concurrent streams.")
final class SchedulerCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "a GGUF file (e.g. from `bench generate`)")
    Path model;

    @Option(names = "--streams", defaultValue = "4", description = "concurrent streams (default: ${DEFAULT-VALUE})")
    int streams;

    @Option(names = "--tokens", defaultValue = "64", description = "tokens generated per stream (default: ${DEFAULT-VALUE})")
    int tokens;

    @Option(names = "--threads", description = "compute threads (default: all processors)")
    int threads = Runtime.getRuntime().availableProcessors();

    @Option(names = "--runs", defaultValue = "3", description = "measured runs per level, after one warm-up (default: ${DEFAULT-VALUE})")
    int runs;

    @Override
    public Integer call() throws Exception {
        if (streams < 1 || streams > 16) throw new InvalidInputException("--streams must be in [1, 16], got " + streams);
        if (tokens < 2) throw new InvalidInputException("--tokens must be at least 2, got " + tokens);
        try (LoadedModel loaded = LoadedModel.load(model, threads, LoadProgress.NONE);
             Scheduler scheduler = new Scheduler(loaded, SchedulerOptions.defaults().withParallel(streams))) {
            level(scheduler, 1, -1);
            double one = 0, many = 0;
            for (int r = 0; r < runs; r++) {
                one = Math.max(one, level(scheduler, 1, r * 100));
                many = Math.max(many, level(scheduler, streams, r * 100 + 50));
            }
            System.out.printf(Locale.ROOT, "decode, best of %d: 1 stream %.2f tok/s, %d streams %.2f tok/s aggregate, ratio %.2f%n",
                    runs, one, streams, many, many / one);
        }
        return 0;
    }

    /** Aggregate decode tok/s of n concurrent streams. */
    private double level(Scheduler scheduler, int n, int seed) throws InterruptedException {
        List<GenerationStream> running = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String prompt = "stream " + i + " of run " + seed + ": tell a story about the number " + (seed * 31 + i);
            running.add(scheduler.submit(GenerationRequest.of(prompt, SamplingOptions.greedy().withNumPredict(tokens))
                    .withCacheSalt("bench " + seed + " " + i)));
        }
        long generated = 0, decodeNanos = 0;
        for (GenerationStream s : running) {
            GenerationResult r = s.await();
            generated += r.generatedIds().length - 1;   // the first token comes from prefill
            decodeNanos = Math.max(decodeNanos, r.generationNanos());
        }
        return generated * 1e9 / decodeNanos;
    }
}
