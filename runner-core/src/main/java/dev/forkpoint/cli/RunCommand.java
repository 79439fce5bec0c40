package dev.forkpoint.cli;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.Scheduler;
import dev.forkpoint.engine.SchedulerOptions;
import dev.forkpoint.sampling.SamplingOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint run}: completes a raw prompt (no chat template), streaming the text to stdout as it is generated,
 * then prints token counts and speeds to stderr. The request goes to a one-slot {@link Scheduler}, the engine driver
 * the server uses. Sampling options have Ollama's names and defaults.
 */
@Command(name = "run", mixinStandardHelpOptions = true, showDefaultValues = true, sortOptions = false,
        description = "Generate text from a prompt (raw completion, no chat template).")
final class RunCommand implements Callable<Integer> {
    private static final SamplingOptions DEFAULTS = SamplingOptions.defaults();

    @ParentCommand
    Main main;

    @Mixin
    ModelOption model;

    @Option(names = {"-p", "--prompt"}, required = true, paramLabel = "TEXT", description = "The prompt; '-' reads it from stdin.")
    String prompt;

    @Option(names = "--temperature", paramLabel = "T", description = "Sampling temperature; 0 = greedy.")
    double temperature = DEFAULTS.temperature();

    @Option(names = "--top-k", paramLabel = "K", description = "Sample among the K most likely tokens; 0 = all.")
    int topK = DEFAULTS.topK();

    @Option(names = "--top-p", paramLabel = "P", description = "Sample among the most likely tokens whose probabilities add up to P.")
    double topP = DEFAULTS.topP();

    @Option(names = "--min-p", paramLabel = "P", description = "Drop tokens less likely than P times the most likely one.")
    double minP = DEFAULTS.minP();

    @Option(names = "--repeat-penalty", paramLabel = "X", description = "Divide the logits of recent tokens by X; 1 = off.")
    double repeatPenalty = DEFAULTS.repeatPenalty();

    @Option(names = "--repeat-last-n", paramLabel = "N", description = "Tokens the penalties look back at; -1 = all, 0 = off.")
    int repeatLastN = DEFAULTS.repeatLastN();

    @Option(names = "--presence-penalty", paramLabel = "X", description = "Subtract X from the logits of tokens already seen.")
    double presencePenalty = DEFAULTS.presencePenalty();

    @Option(names = "--frequency-penalty", paramLabel = "X", description = "Subtract X per occurrence from the logits of tokens seen.")
    double frequencyPenalty = DEFAULTS.frequencyPenalty();

    @Option(names = "--seed", paramLabel = "N", description = "Random seed; -1 = a random one.")
    long seed = DEFAULTS.seed();

    @Option(names = {"-n", "--num-predict"}, paramLabel = "N", description = "Most tokens to generate; -1 = until done or the context is full.")
    int numPredict = DEFAULTS.numPredict();

    @Option(names = "--stop", paramLabel = "TEXT", showDefaultValue = picocli.CommandLine.Help.Visibility.NEVER,
            description = "Stop before this text (repeatable).")
    List<String> stop = new ArrayList<>();

    @Option(names = {"-t", "--threads"}, paramLabel = "N", description = "Worker threads; the default is the number of available processors.")
    int threads = Runtime.getRuntime().availableProcessors();

    @picocli.CommandLine.Mixin
    BackendOption backend = new BackendOption();

    @Option(names = "--num-batch", paramLabel = "N", description = "Prompt tokens evaluated per step, 1 … num_ctx (default: 512, or num_ctx if smaller).")
    Integer numBatch;

    @Option(names = "--kv-cache-bytes", paramLabel = "BYTES",
            description = "KV cache budget in bytes; 0 = room for two sequences of num_ctx (committed only as used).")
    long kvCacheBytes = 0;

    @Option(names = "--checkpoint-bytes", paramLabel = "BYTES",
            description = "Budget for recurrent-state checkpoints of hybrid models (Qwen3.5); 0 = " + EngineOptions.DEFAULT_CHECKPOINTS + " states per sequence.")
    long checkpointBytes = 0;

    @Option(names = "--kv-type", paramLabel = "f32|f16|q8_0|q4_0", description = "Element type of cached keys and values (q8_0, q4_0: quantised, CPU backend).")
    String kvType = "f32";

    @Option(names = "--num-ctx", paramLabel = "N", description = "Context window in tokens; 0 = Ollama's 4096, or the model's trained context when smaller.")
    int numCtx = 0;

    @Override
    public Integer call() throws IOException {
        CliEnvironment env = main.environment();
        SamplingOptions sampling = new SamplingOptions(temperature, topK, topP, minP, repeatPenalty, repeatLastN,
                presencePenalty, frequencyPenalty, seed, numPredict, List.copyOf(stop)).validate();
        if (numBatch != null) atLeast("num_batch", numBatch, 1);
        atLeast("num_ctx", numCtx, 0);
        atLeast("threads", threads, 1);
        BackendChoice choice = backend.choice();
        backend.kernelChoice();   // refuses a bad --kernels now
        backend.check();   // refuses an impossible --backend here, before reading the prompt
        String text = prompt.equals("-") ? new String(env.in().readAllBytes(), StandardCharsets.UTF_8) : prompt;

        EngineOptions engine = new EngineOptions(kvCacheBytes, EngineOptions.parseKvType(kvType), 2, checkpointBytes, choice, numCtx, backend.mlxLib, backend.kernelChoice());
        try (LoadedModel loaded = model.load(env, threads, main.debug(), engine);
             Scheduler scheduler = new Scheduler(loaded, SchedulerOptions.alone())) {   // the server's driver, one slot
            var out = env.out();
            var last = new StringBuilder(1);
            GenerationResult result;
            try {
                result = scheduler.generate(new GenerationRequest(text, sampling, numCtx, numBatch == null ? GenerationRequest.NUM_BATCH_DEFAULT : numBatch), piece -> {
                    if (piece.isEmpty()) return;
                    out.print(piece);
                    out.flush();
                    if (out.checkError()) throw new OutputClosed();
                    last.setLength(0);
                    last.append(piece.charAt(piece.length() - 1));
                });
            } catch (OutputClosed e) {
                return ExitCodes.OK;   // the reader went away (… | head): nothing left to do
            }
            if (!last.isEmpty() && last.charAt(0) != '\n') out.println();
            out.flush();
            env.err().println(String.format(Locale.ROOT, "prompt: %d tokens (%d cached, %d evaluated), %.1f tok/s · generation: %d tokens, %.1f tok/s · done: %s",
                    result.promptTokens(), result.cachedTokens(), result.evaluatedPromptTokens(), result.promptTokensPerSecond(), result.generatedIds().length,
                    result.generationTokensPerSecond(), result.doneReason()));
        }
        return ExitCodes.OK;
    }

    /** Thrown from the token sink to end generation once stdout is closed. */
    private static final class OutputClosed extends RuntimeException {
        OutputClosed() { super(null, null, false, false); }
    }

    static void atLeast(String option, long value, long min) {
        if (value < min) throw new InvalidInputException("option " + option + " must be >= " + min + ", got " + value);
    }
}
