package dev.forkpoint.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.forkpoint.InvalidInputException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint bench compare}: Forkpoint against llama.cpp on the same GGUF, prompt, thread count and context,
 * runs alternating between the engines after one warm-up each. Run i uses the same prompt on both engines, and a
 * different one from run i − 1, so that no prefix cache can shorten a prefill.
 */
@Command(name = "compare", mixinStandardHelpOptions = true,
        description = "Compare Forkpoint's prefill and decode speed with llama.cpp (de.kherud:llama) on one GGUF.")
final class CompareCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "the GGUF file")
    Path model;

    @Option(names = "--threads", defaultValue = "2", description = "threads for both engines (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--runs", defaultValue = "5", description = "measured runs per engine (default: ${DEFAULT-VALUE})")
    int runs;

    @Option(names = "--prompt-tokens", defaultValue = "512",
            description = "prompt length in tokens, BOS included (default: ${DEFAULT-VALUE})")
    int promptTokens;

    @Option(names = "--gen-tokens", defaultValue = "128", description = "tokens to generate (default: ${DEFAULT-VALUE})")
    int genTokens;

    @Option(names = "--batch", defaultValue = "512", description = "prefill batch size for both engines, at most the context (default: ${DEFAULT-VALUE})")
    int batch;

    @Option(names = "--seed", defaultValue = "1", description = "seed of the prompt texts (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--json", description = "also write the results as JSON here")
    Path json;

    @Option(names = "--forkpoint-only", description = "measure Forkpoint alone")
    boolean forkpointOnly;

    @Option(names = "--llamacpp-only", description = "measure llama.cpp alone")
    boolean llamacppOnly;

    @Option(names = "--llamacpp-log", description = "echo llama.cpp's log to stderr")
    boolean llamacppLog;

    /** One engine's results. */
    record EngineReport(String engine, long residentKbAfterLoad, long residentKbAfterRuns, int promptTokens, int promptTokensWithoutBos,
                        Summary prefillTokensPerSecond, Summary decodeTokensPerSecond, List<EngineRun> runs) {}

    /** The whole comparison, as written to --json. */
    record Report(String model, long modelBytes, int threads, int requestedPromptTokens, int genTokens, int ctx,
                  int batch, int warmups, List<EngineReport> engines, Double prefillRatio, Double decodeRatio,
                  boolean promptTokensEqual) {}

    @Override
    public Integer call() throws Exception {
        if (!Files.isRegularFile(model)) throw new InvalidInputException("model file " + model + " does not exist");
        if (forkpointOnly && llamacppOnly) throw new InvalidInputException("--forkpoint-only and --llamacpp-only exclude each other");
        if (runs < 1 || threads < 1 || promptTokens < 2 || genTokens < 2 || batch < 1) {
            throw new InvalidInputException("--runs and --threads must be ≥ 1, --prompt-tokens and --gen-tokens ≥ 2, --batch ≥ 1");
        }
        int ctx = (promptTokens + genTokens + 16 + 255) / 256 * 256;
        int batch = Math.min(this.batch, ctx);
        int chars = promptTokens - 1; // one token per character, plus BOS
        String warmupPrompt = PromptText.of(chars, seed * 1_000_003L);
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < runs; i++) prompts.add(PromptText.of(chars, seed * 1_000_003L + 1 + i));

        System.out.printf(Locale.ROOT, "model %s (%.2f GB), %d threads, prompt %d tokens (BOS + %d characters), %d generated, ctx %d, batch %d%n",
                model, Files.size(model) / 1e9, threads, promptTokens, chars, genTokens, ctx, batch);
        List<BenchEngine> engines = new ArrayList<>();
        try {
            if (!llamacppOnly) {
                // Loaded first, so its resident memory is measured before anything else runs.
                engines.add(ForkpointEngine.load(model, threads, ctx, batch));
                System.out.println("forkpoint loaded, resident " + gb(engines.getLast().residentKbAfterLoad()));
            }
            if (!forkpointOnly) {
                engines.add(LlamaCppEngine.start(model, threads, ctx, batch, llamacppLog));
                System.out.println("llama.cpp loaded (child process), resident " + gb(engines.getLast().residentKbAfterLoad()));
            }
            Map<BenchEngine, List<EngineRun>> results = new LinkedHashMap<>();
            Map<BenchEngine, Integer> counts = new LinkedHashMap<>();
            for (BenchEngine e : engines) {
                counts.put(e, e.countTokens(prompts.getFirst()));
                results.put(e, new ArrayList<>());
                EngineRun w = e.run(warmupPrompt, genTokens);
                System.out.printf(Locale.ROOT, "%-10s warm-up: prefill %.1f tok/s, decode %.1f tok/s%n",
                        e.name(), w.prefillTokensPerSecond(), w.decodeTokensPerSecond());
            }
            for (int i = 0; i < runs; i++) {
                for (BenchEngine e : engines) {
                    EngineRun r = e.run(prompts.get(i), genTokens);
                    results.get(e).add(r);
                    System.out.printf(Locale.ROOT, "%-10s run %d: prompt %d tokens %.1f tok/s, %d generated %.1f tok/s (%s timing)%n",
                            e.name(), i + 1, r.promptTokens(), r.prefillTokensPerSecond(), r.generatedTokens(),
                            r.decodeTokensPerSecond(), r.timingSource());
                }
            }
            Report report = report(engines, results, counts, ctx, batch);
            print(report);
            if (json != null) {
                new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), report);
                System.out.println("wrote " + json);
            }
        } finally {
            for (BenchEngine e : engines) e.close();
        }
        return 0;
    }

    private Report report(List<BenchEngine> engines, Map<BenchEngine, List<EngineRun>> results,
                          Map<BenchEngine, Integer> counts, int ctx, int batch) throws IOException {
        List<EngineReport> reports = new ArrayList<>();
        for (BenchEngine e : engines) {
            List<EngineRun> rs = results.get(e);
            reports.add(new EngineReport(e.name(), e.residentKbAfterLoad(), e.residentKbNow(), rs.getFirst().promptTokens(), counts.get(e),
                    Summary.of(rs.stream().mapToDouble(EngineRun::prefillTokensPerSecond).toArray()),
                    Summary.of(rs.stream().mapToDouble(EngineRun::decodeTokensPerSecond).toArray()), rs));
        }
        Double prefillRatio = null, decodeRatio = null;
        boolean equal = true;
        if (reports.size() == 2) {
            EngineReport f = reports.get(0), l = reports.get(1);
            prefillRatio = f.prefillTokensPerSecond().median() / l.prefillTokensPerSecond().median();
            decodeRatio = f.decodeTokensPerSecond().median() / l.decodeTokensPerSecond().median();
            equal = f.promptTokensWithoutBos() == l.promptTokensWithoutBos()
                    && (l.promptTokens() < 0 || f.promptTokens() == l.promptTokens());
        }
        return new Report(model.toString(), Files.size(model), threads, promptTokens, genTokens, ctx, batch, 1,
                reports, prefillRatio, decodeRatio, equal);
    }

    private static void print(Report r) {
        System.out.println();
        for (EngineReport e : r.engines()) {
            System.out.printf(Locale.ROOT, "%-10s prompt tokens: %d without BOS, %s evaluated per run%n", e.engine(),
                    e.promptTokensWithoutBos(), e.promptTokens() < 0 ? "?" : Integer.toString(e.promptTokens()));
        }
        if (r.engines().size() == 2) {
            System.out.println(r.promptTokensEqual() ? "prompt token counts are equal on both engines"
                    : "WARNING: prompt token counts differ between the engines; the comparison is not like for like");
        }
        System.out.printf(Locale.ROOT, "%n%-12s %-30s %-30s %s%n", "engine", "prefill tok/s median (min–max)",
                "decode tok/s median (min–max)", "resident after load / after runs");
        for (EngineReport e : r.engines()) {
            System.out.printf(Locale.ROOT, "%-12s %-30s %-30s %s%n", e.engine(), cell(e.prefillTokensPerSecond()),
                    cell(e.decodeTokensPerSecond()), gb(e.residentKbAfterLoad()) + " / " + gb(e.residentKbAfterRuns()));
        }
        if (r.prefillRatio() != null) {
            System.out.printf(Locale.ROOT, "%-12s %-30s %-30s%n", "ratio F/L", String.format(Locale.ROOT, "%.2f", r.prefillRatio()),
                    String.format(Locale.ROOT, "%.2f", r.decodeRatio()));
        }
        System.out.printf(Locale.ROOT, "(%d runs each after 1 warm-up, alternating; %d threads; prompt %d, generate %d)%n",
                r.engines().getFirst().runs().size(), r.threads(), r.requestedPromptTokens(), r.genTokens());
    }

    private static String cell(Summary s) {
        return String.format(Locale.ROOT, "%.1f (%.1f–%.1f)", s.median(), s.min(), s.max());
    }

    private static String gb(long kb) {
        return kb < 0 ? "unknown" : String.format(Locale.ROOT, "%.2f GB", kb * 1024 / 1e9);
    }
}
