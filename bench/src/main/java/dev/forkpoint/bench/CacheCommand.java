package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint bench cache}: FACTS §1 B at full size ({@link CacheBenchmark}): a ~65k-token prompt, the same with
 * its last character changed, the same with its session id changed; tokens evaluated and reused and the TTFT of each,
 * through Forkpoint's engine in-process. Without {@code --model} it generates the {@code long-context} shape (dim 64,
 * 2 layers, context 131 072, f16; a few hundred kB) into a temporary file, so it runs in minutes on a small CPU.
 */
@Command(name = "cache", mixinStandardHelpOptions = true,
        description = "Prefix-cache reuse of a long prompt (FACTS §1 B): cold, last character changed, session id changed.")
final class CacheCommand implements Callable<Integer> {
    @Option(names = "--model", description = "a GGUF file or model folder (a hybrid Qwen3.5 too) with a context ≥ --tokens (default: a generated long-context model)")
    Path model;

    @Option(names = "--tokens", defaultValue = "65536", description = "prompt tokens, BOS included (default: ${DEFAULT-VALUE})")
    int tokens;

    @Option(names = "--threads", defaultValue = "2", description = "engine threads (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--num-batch", defaultValue = "512", description = "prefill chunk, as Ollama's num_batch (default: ${DEFAULT-VALUE})")
    int numBatch;

    @Override
    public Integer call() throws Exception {
        if (tokens < 16) throw new InvalidInputException("--tokens must be ≥ 16, got " + tokens);
        if (model != null && !Files.exists(model)) throw new InvalidInputException("--model " + model + " is not a file or folder");
        Path file = model;
        Path temp = null;
        try {
            if (file == null) {
                temp = Files.createTempFile("forkpoint-long-context-", ".gguf");
                var w = new SyntheticModelWriter(ModelShape.LONG_CONTEXT, FileType.F16, 42, false, threads).write(temp);
                System.out.printf(Locale.ROOT, "model: generated %s shape, f16, %,d parameters (%s)%n", ModelShape.LONG_CONTEXT.name(), w.parameters(), temp);
                file = temp;
            }
            int numCtx = (tokens + 16 + 255) / 256 * 256;
            // the derived KV budget counts sequences of the default num_ctx (≤ 4096): room for three prompts' worth
            int sequences = 3 * ((numCtx + 4095) / 4096) + 1;
            try (LoadedModel loaded = LoadedModel.load(file, threads, LoadProgress.NONE, EngineOptions.defaults().withSequences(sequences))) {
                int context = loaded.config().contextLength();
                if (numCtx > context) {
                    throw new InvalidInputException("--tokens " + tokens + " needs a context of " + numCtx + " but " + file.getFileName()
                            + " was trained for " + context + " tokens; give fewer --tokens or leave out --model (the generated model has 131072)");
                }
                CacheBenchmark.Prompts prompts = CacheBenchmark.prompts(loaded.tokenizer(), tokens);
                System.out.printf(Locale.ROOT, "prompt: %,d tokens (session id at character %d), %d threads, num_batch %d%n",
                        loaded.tokenizer().encode(prompts.base(), true, false).length, prompts.sessionIdAt(), threads, numBatch);
                System.out.printf(Locale.ROOT, "%-37s %13s %10s %10s %12s %14s%n", "case", "prompt tokens", "evaluated", "reused", "TTFT", "engine prompt");
                System.out.flush();
                ratios(CacheBenchmark.run(loaded, prompts, numCtx, numBatch, Math.min(2048, tokens / 4), CacheCommand::row));
                var info = loaded.info();
                if (info.recurrentBytesPerSequence() > 0) {
                    var stats = loaded.cacheStats();
                    System.out.printf(Locale.ROOT, "hybrid (%s): %,d bytes of recurrent state per checkpoint (fork point); %d checkpoints held, %,d bytes of a %,d budget, %d evicted%n",
                            info.layerKinds(), info.recurrentBytesPerSequence(), stats.checkpoints(), stats.checkpointBytes(),
                            stats.checkpointBudgetBytes(), stats.evictedCheckpoints());
                }
            }
        } finally {
            if (temp != null) Files.deleteIfExists(temp);
        }
        return 0;
    }

    private static void row(CacheBenchmark.Case c) {
        System.out.printf(Locale.ROOT, "%-37s %,13d %,10d %,10d %12s %14s%n", c.name(), c.promptTokens(), c.evaluated(), c.reused(),
                duration(c.ttftNanos()), duration(c.promptNanos()));
        System.out.flush();
    }

    private static void ratios(List<CacheBenchmark.Case> cases) {
        var cold = cases.get(0);
        var lastChar = cases.get(1);
        var session = cases.get(2);
        System.out.printf(Locale.ROOT, "last character changed: %,d of %,d tokens evaluated (%.4f %%), TTFT %.4f× the cold one (%.0f× faster)%n",
                lastChar.evaluated(), lastChar.promptTokens(), 100.0 * lastChar.evaluated() / lastChar.promptTokens(),
                (double) lastChar.ttftNanos() / cold.ttftNanos(), (double) cold.ttftNanos() / lastChar.ttftNanos());
        System.out.printf(Locale.ROOT, "session id changed: %,d of %,d tokens evaluated (%.2f %%), TTFT %.2f× the cold one "
                        + "(everything after the change must be recomputed by any runner)%n",
                session.evaluated(), session.promptTokens(), 100.0 * session.evaluated() / session.promptTokens(),
                (double) session.ttftNanos() / cold.ttftNanos());
        System.out.println("reference (FACTS §1 B): Ollama's MLX runner re-prefilled 7,961 of 65,304 tokens after a last-character change");
    }

    private static String duration(long nanos) {
        return nanos >= 1_000_000_000L ? String.format(Locale.ROOT, "%.2f s", nanos / 1e9) : String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
    }
}
