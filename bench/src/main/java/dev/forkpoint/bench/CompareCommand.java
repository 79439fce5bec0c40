package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.convert.MlxOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint bench compare}: Forkpoint against llama.cpp and Jlama on the same weights, prompt, context and
 * thread count, for each thread count in {@code --threads}; runs alternate between the engines after one warm-up
 * each. Jlama reads Hugging Face folders, so the GGUF is exported once to a temporary folder (see {@link Jlama}: the
 * same weights for F32/F16/BF16 files; re-quantised, and labelled so, only with {@code --jlama-requantize});
 * Forkpoint also runs that folder as the row {@value ForkpointEngine#HF_FOLDER}. Run i uses the same prompt on every
 * engine, and a different one from run i − 1, so that no prefix cache can shorten a prefill. With {@code --out DIR}: report.json, report.csv, report.md (machine,
 * command, table) and report.png; {@code --readme FILE} puts the Markdown into FILE between the report markers.
 */
@Command(name = "compare", mixinStandardHelpOptions = true,
        description = "Compare Forkpoint's prefill and decode speed with llama.cpp (de.kherud:llama) and Jlama "
                + "(com.github.tjake:jlama-core, on the same weights exported to a Hugging Face folder) on one GGUF; "
                + "with --out, a report (JSON, CSV, Markdown, PNG).")
final class CompareCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--model", required = true, description = "the GGUF file")
    Path model;

    @Option(names = "--threads", split = ",", defaultValue = "1,2",
            description = "thread counts, comma-separated; every engine is measured at each (default: ${DEFAULT-VALUE})")
    List<Integer> threads;

    @Option(names = "--runs", defaultValue = "5", description = "measured runs per engine and thread count (default: ${DEFAULT-VALUE})")
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

    @Option(names = "--engines", split = ",", defaultValue = "forkpoint,llama.cpp,jlama,forkpoint-hf",
            description = "engines to include, comma-separated: forkpoint (its default kernels: native when a C compiler built "
                    + "them), forkpoint-java (the Java kernels), llama.cpp, jlama, forkpoint-hf (Forkpoint on the "
                    + "folder exported for Jlama) (default: ${DEFAULT-VALUE})")
    List<String> engineNames;

    @Option(names = "--jlama-requantize", paramLabel = "q4|f16",
            description = "measure Jlama on a GGUF with quantised blocks anyway: on the weights dequantised to F16, as they are "
                    + "(f16) or quantised by Jlama to its Q4; the row says these are not the same weights")
    String jlamaRequantize;

    @Option(names = "--jlama-log", description = "echo Jlama's log to stderr")
    boolean jlamaLog;

    @Option(names = "--out", description = "write report.json, report.csv, report.md and report.png into this folder")
    Path out;

    @Option(names = "--readme", description = "replace the section between the report markers of this Markdown file with the report")
    Path readme;

    @Option(names = "--json", description = "also write the report as JSON here")
    Path json;

    @Option(names = "--forkpoint-only", description = "measure Forkpoint alone (same as --engines forkpoint)")
    boolean forkpointOnly;

    @Option(names = "--llamacpp-only", description = "measure llama.cpp alone (same as --engines llama.cpp)")
    boolean llamacppOnly;

    @Option(names = "--llamacpp-log", description = "echo llama.cpp's log to stderr")
    boolean llamacppLog;

    @Option(names = "--forkpoint-model", paramLabel = "FILE|FOLDER",
            description = "Forkpoint's rows (forkpoint, forkpoint-java) load this model instead of --model, e.g. the --model "
                    + "GGUF converted to an MLX folder; the other engines keep --model, and those rows of the report say so")
    Path forkpointModel;

    static final String FORKPOINT_HF = "forkpoint-hf";

    /** The export for Jlama and forkpoint-hf, while {@link #call()} runs (null when neither runs). */
    private Path hfFolder;
    /** A note on Jlama's row about this model, or null. */
    private String jlamaNote;

    @Override
    public Integer call() throws Exception {
        if (!Files.isRegularFile(model)) throw new InvalidInputException("model file " + model + " does not exist");
        if (forkpointModel != null && !Files.exists(forkpointModel)) {
            throw new InvalidInputException("--forkpoint-model " + forkpointModel + " does not exist");
        }
        if (forkpointOnly && llamacppOnly) throw new InvalidInputException("--forkpoint-only and --llamacpp-only exclude each other");
        if (runs < 1 || promptTokens < 2 || genTokens < 2 || batch < 1) {
            throw new InvalidInputException("--runs must be ≥ 1, --prompt-tokens and --gen-tokens ≥ 2, --batch ≥ 1");
        }
        for (int t : threads) if (t < 1) throw new InvalidInputException("--threads " + t + ": every thread count must be ≥ 1");
        List<String> names = forkpointOnly ? List.of("forkpoint") : llamacppOnly ? List.of(CompareReport.BASELINE) : List.copyOf(new LinkedHashSet<>(engineNames));
        for (String n : names) {
            if (!List.of(ForkpointEngine.NAME, ForkpointEngine.JAVA_KERNELS, CompareReport.BASELINE, Jlama.ENGINE, FORKPOINT_HF).contains(n)) {
                throw new InvalidInputException("--engines " + n + ": unknown engine (forkpoint, forkpoint-java, llama.cpp, jlama, forkpoint-hf)");
            }
        }
        Jlama jlama = Jlama.plan(model, jlamaRequantize);
        boolean runJlama = names.contains(Jlama.ENGINE) && jlama.measured();
        // Forkpoint on the export only when it holds the GGUF's own weights (otherwise the row would say nothing new).
        boolean runForkpointHf = names.contains(FORKPOINT_HF) && jlama.sameWeights();
        Path exportRoot = null;
        try {
            if (runJlama || runForkpointHf) {
                exportRoot = Files.createTempDirectory("forkpoint-bench-hf-");
                hfFolder = exportRoot.resolve("model");
                long start = System.nanoTime();
                ModelConverter.toMlx(model, hfFolder, MlxOptions.defaults().unquantised().withFloatType(jlama.exportFloatType()), (a, b) -> {});
                System.out.printf(Locale.ROOT, "exported %s to %s (Hugging Face folder, %s) in %.1f s%n", model, hfFolder,
                        jlama.sameWeights() ? "the same weights" : "dequantised weights", (System.nanoTime() - start) / 1e9);
                jlamaNote = runJlama ? Jlama.ropeScalingNote(hfFolder) : null;
            }
            return compare(names, jlama, runJlama, runForkpointHf);
        } finally {
            if (exportRoot != null) deleteTree(exportRoot);
        }
    }

    /** Measures and writes the report; {@code hfFolder} holds the export when Jlama or forkpoint-hf run. */
    private int compare(List<String> names, Jlama jlama, boolean runJlama, boolean runForkpointHf) throws IOException {
        int ctx = (promptTokens + genTokens + 16 + 255) / 256 * 256;
        int batch = Math.min(this.batch, ctx);
        int chars = promptTokens - 1; // one token per character, plus BOS
        String warmupPrompt = PromptText.of(chars, seed * 1_000_003L);
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < runs; i++) prompts.add(PromptText.of(chars, seed * 1_000_003L + 1 + i));

        System.out.printf(Locale.ROOT, "model %s (%.2f GB), threads %s, prompt %d tokens (BOS + %d characters), %d generated, ctx %d, batch %d%n",
                model, Files.size(model) / 1e9, threads, promptTokens, chars, genTokens, ctx, batch);
        List<CompareReport.ThreadsResult> results = new ArrayList<>();
        for (int t : threads) {
            List<CompareReport.EngineReport> reports = measure(names, jlama, runJlama, runForkpointHf, t, ctx, batch, warmupPrompt, prompts);
            if (names.contains(Jlama.ENGINE) && !runJlama) {
                reports.add(CompareReport.EngineReport.notMeasured(Jlama.ENGINE, Jlama.STATUS, jlama.reason()));
            }
            results.add(CompareReport.ThreadsResult.of(t, reports));
        }
        var report = new CompareReport(MachineInfo.current(), commandLine(), model.toString(), Files.size(model), promptTokens, genTokens,
                ctx, batch, 1, runs, results);
        System.out.println();
        System.out.print(CompareReportWriter.markdown(report));
        if (json != null) {
            CompareReportWriter.writeJson(report, json);
            System.out.println("wrote " + json);
        }
        if (out != null) {
            for (Path p : CompareReportWriter.writeAll(report, out)) System.out.println("wrote " + p);
        }
        if (readme != null) {
            CompareReportWriter.updateReadme(readme, CompareReportWriter.markdown(report));
            System.out.println("updated " + readme);
        }
        return 0;
    }

    /** Loads the engines at {@code threads}, runs one warm-up each, then the alternating runs; closes them. */
    private List<CompareReport.EngineReport> measure(List<String> names, Jlama jlama, boolean runJlama, boolean runForkpointHf,
                                                     int threads, int ctx, int batch, String warmupPrompt, List<String> prompts)
            throws IOException {
        List<BenchEngine> engines = new ArrayList<>();
        try {
            if (names.contains(ForkpointEngine.NAME)) {
                // Loaded first, so its resident memory is measured before anything else runs.
                engines.add(ForkpointEngine.load(forkpointModel(), threads, ctx, batch));
                System.out.println("forkpoint loaded (" + threads + " threads, kernels " + ((ForkpointEngine) engines.getLast()).kernels()
                        + "), resident " + gb(engines.getLast().residentKbAfterLoad()));
            }
            if (names.contains(ForkpointEngine.JAVA_KERNELS)) {
                engines.add(ForkpointEngine.loadJavaKernels(forkpointModel(), threads, ctx, batch));
                System.out.println(ForkpointEngine.JAVA_KERNELS + " loaded (" + threads + " threads, the Java kernels, same process)");
            }
            if (names.contains(CompareReport.BASELINE)) {
                engines.add(LlamaCppEngine.start(model, threads, ctx, batch, llamacppLog));
                System.out.println("llama.cpp loaded (child process, " + threads + " threads), resident " + gb(engines.getLast().residentKbAfterLoad()));
            }
            if (runJlama) {
                engines.add(JlamaEngine.start(jlama.engineName(), hfFolder, threads, jlama.weights(), jlamaLog));
                System.out.println("jlama loaded (child process, " + threads + " threads, weights " + jlama.weights() + "), resident "
                        + gb(engines.getLast().residentKbAfterLoad()));
            }
            if (runForkpointHf) {
                engines.add(ForkpointEngine.loadFolder(hfFolder, threads, ctx, batch));
                System.out.println(ForkpointEngine.HF_FOLDER + " loaded (" + threads + " threads, same process as forkpoint)");
            }
            Map<BenchEngine, List<EngineRun>> results = new LinkedHashMap<>();
            Map<BenchEngine, Integer> counts = new LinkedHashMap<>();
            for (BenchEngine e : engines) {
                counts.put(e, e.countTokens(prompts.getFirst()));
                results.put(e, new ArrayList<>());
                EngineRun w = e.run(warmupPrompt, genTokens);
                System.out.printf(Locale.ROOT, "%-10s %d threads warm-up: prefill %.1f tok/s, decode %.1f tok/s%n",
                        e.name(), threads, w.prefillTokensPerSecond(), w.decodeTokensPerSecond());
            }
            for (int i = 0; i < prompts.size(); i++) {
                for (BenchEngine e : engines) {
                    EngineRun r = e.run(prompts.get(i), genTokens);
                    results.get(e).add(r);
                    System.out.printf(Locale.ROOT, "%-10s %d threads run %d: prompt %d tokens %.1f tok/s, %d generated %.1f tok/s (%s timing)%n",
                            e.name(), threads, i + 1, r.promptTokens(), r.prefillTokensPerSecond(), r.generatedTokens(),
                            r.decodeTokensPerSecond(), r.timingSource());
                }
            }
            List<CompareReport.EngineReport> reports = new ArrayList<>();
            for (BenchEngine e : engines) {
                var r = CompareReport.EngineReport.measured(e.name(), e.residentKbAfterLoad(), e.residentKbNow(), counts.get(e), results.get(e));
                if (e instanceof JlamaEngine) r = r.withNote(jlama.rowNote(jlamaNote));
                if (forkpointModel != null && (e.name().equals(ForkpointEngine.NAME) || e.name().equals(ForkpointEngine.JAVA_KERNELS))) {
                    r = r.withNote("on --forkpoint-model " + forkpointModel + ", not the other rows' " + model);
                }
                if (e.name().equals(ForkpointEngine.HF_FOLDER)) {
                    r = r.withNote("the folder exported for Jlama (same weights); shares the process with forkpoint, so its resident memory is not its own");
                }
                reports.add(r);
            }
            return reports;
        } finally {
            for (BenchEngine e : engines) e.close();
        }
    }

    /** The model Forkpoint's own rows load: --forkpoint-model, else --model. */
    private Path forkpointModel() {
        return forkpointModel != null ? forkpointModel : model;
    }

    private static void deleteTree(Path root) {
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException e) {
            System.err.println("could not delete the exported folder " + root + ": " + e.getMessage());
        }
    }

    /** The command that reproduces this report, as typed (paths as given). */
    private String commandLine() {
        List<String> args = spec == null ? List.of() : spec.commandLine().getParseResult().originalArgs();
        int own = args.indexOf(spec == null ? "" : spec.name());   // the parse result's arguments start at the top command
        if (own >= 0) args = args.subList(own + 1, args.size());
        StringBuilder sb = new StringBuilder("./forkpoint bench compare");
        for (String a : args) sb.append(' ').append(a.matches("[A-Za-z0-9_./,=:@%+-]+") ? a : "'" + a.replace("'", "'\\''") + "'");
        return sb.toString();
    }

    private static String gb(long kb) {
        return kb < 0 ? "unknown" : String.format(Locale.ROOT, "%.2f GB", kb * 1024 / 1e9);
    }
}
