package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code bench formats}: the same weights in two formats on Forkpoint's CPU backend — a GGUF file and an MLX folder
 * (typically {@code forkpoint convert} of that file) — prefill and decode, alternating runs, medians and the MLX/GGUF
 * ratio (the MLX format issue's goal: MLX 4-bit group 64 decodes within 10% of GGUF Q4_0, ratio ≥ 0.90).
 */
@Command(name = "formats", mixinStandardHelpOptions = true,
        description = "Forkpoint on the same weights as GGUF and as an MLX folder: prefill/decode tok/s and the MLX/GGUF ratio.")
final class FormatsCommand implements Callable<Integer> {
    @Option(names = "--gguf", required = true, description = "the GGUF file")
    Path gguf;

    @Option(names = "--mlx", required = true, description = "the MLX (Hugging Face layout) folder with the same weights")
    Path mlx;

    @Option(names = "--threads", defaultValue = "2", description = "threads (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--runs", defaultValue = "3", description = "measured runs per format (default: ${DEFAULT-VALUE})")
    int runs;

    @Option(names = "--prompt-tokens", defaultValue = "128", description = "prompt length, BOS included (default: ${DEFAULT-VALUE})")
    int promptTokens;

    @Option(names = "--gen-tokens", defaultValue = "64", description = "tokens to generate (default: ${DEFAULT-VALUE})")
    int genTokens;

    @Override
    public Integer call() throws Exception {
        if (!Files.isRegularFile(gguf)) throw new InvalidInputException("--gguf " + gguf + " is not a file");
        if (!Files.isDirectory(mlx)) throw new InvalidInputException("--mlx " + mlx + " is not a folder");
        if (runs < 1 || threads < 1 || promptTokens < 2 || genTokens < 2) {
            throw new InvalidInputException("--runs and --threads must be ≥ 1, --prompt-tokens and --gen-tokens ≥ 2");
        }
        int ctx = (promptTokens + genTokens + 16 + 255) / 256 * 256;
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i <= runs; i++) prompts.add(PromptText.of(promptTokens - 1, 7_000_003L + i));
        Map<String, ForkpointEngine> engines = new LinkedHashMap<>();
        Map<String, List<EngineRun>> results = new LinkedHashMap<>();
        try {
            engines.put("gguf", ForkpointEngine.load(gguf, threads, ctx, Math.min(512, ctx)));
            engines.put("mlx", ForkpointEngine.load(mlx, threads, ctx, Math.min(512, ctx)));
            System.out.printf(Locale.ROOT, "gguf %s%nmlx  %s%n%d threads, prompt %d tokens, %d generated%n", gguf, mlx, threads, promptTokens, genTokens);
            for (var e : engines.entrySet()) {
                EngineRun w = e.getValue().run(prompts.getFirst(), genTokens);
                System.out.printf(Locale.ROOT, "%-5s warm-up: prefill %.1f tok/s, decode %.1f tok/s%n", e.getKey(),
                        w.prefillTokensPerSecond(), w.decodeTokensPerSecond());
                results.put(e.getKey(), new ArrayList<>());
            }
            for (int i = 1; i <= runs; i++) {
                for (var e : engines.entrySet()) {
                    EngineRun r = e.getValue().run(prompts.get(i), genTokens);
                    results.get(e.getKey()).add(r);
                    System.out.printf(Locale.ROOT, "%-5s run %d: prefill %.1f tok/s, decode %.1f tok/s%n", e.getKey(), i,
                            r.prefillTokensPerSecond(), r.decodeTokensPerSecond());
                }
            }
        } finally {
            for (ForkpointEngine e : engines.values()) e.close();
        }
        Summary gp = prefill(results.get("gguf")), gd = decode(results.get("gguf"));
        Summary mp = prefill(results.get("mlx")), md = decode(results.get("mlx"));
        System.out.printf(Locale.ROOT, "%n%-6s %-28s %-28s%n", "format", "prefill tok/s median (min–max)", "decode tok/s median (min–max)");
        System.out.printf(Locale.ROOT, "%-6s %-28s %-28s%n", "gguf", cell(gp), cell(gd));
        System.out.printf(Locale.ROOT, "%-6s %-28s %-28s%n", "mlx", cell(mp), cell(md));
        System.out.printf(Locale.ROOT, "%-6s %-28.2f %-28.2f (decode goal ≥ 0.90)%n", "ratio", mp.median() / gp.median(), md.median() / gd.median());
        return 0;
    }

    private static Summary prefill(List<EngineRun> runs) {
        return Summary.of(runs.stream().mapToDouble(EngineRun::prefillTokensPerSecond).toArray());
    }

    private static Summary decode(List<EngineRun> runs) {
        return Summary.of(runs.stream().mapToDouble(EngineRun::decodeTokensPerSecond).toArray());
    }

    private static String cell(Summary s) {
        return String.format(Locale.ROOT, "%.1f (%.1f–%.1f)", s.median(), s.min(), s.max());
    }
}
