package dev.forkpoint.cli;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.store.ModelResolver;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code forkpoint convert IN OUT --to mlx|gguf}: moves a model between the llama.cpp path (a GGUF file) and the MLX
 * path (an mlx-community-style folder).
 */
@Command(name = "convert", mixinStandardHelpOptions = true, showDefaultValues = true,
        description = {"Convert a model between GGUF and MLX (Hugging Face safetensors) formats.",
                "--to mlx: IN is a .gguf file, an Ollama model name or a Hugging Face / MLX folder (re-quantised); OUT is a new folder.",
                "--to gguf: IN is a Hugging Face / MLX folder; OUT is a .gguf file."})
final class ConvertCommand implements Callable<Integer> {
    @ParentCommand
    Main main;

    @Parameters(index = "0", paramLabel = "IN", description = "The model: a .gguf file, an Ollama model name or a model folder.")
    String input;

    @Parameters(index = "1", paramLabel = "OUT", description = "The folder (--to mlx) or .gguf file (--to gguf) to write.")
    Path output;

    @Option(names = "--to", paramLabel = "FORMAT", required = true, description = "mlx or gguf.")
    String to;

    @Option(names = "--bits", paramLabel = "N", description = "MLX: bits per quantised weight (2, 3, 4, 5, 6 or 8).")
    int bits = 4;

    @Option(names = "--group-size", paramLabel = "N", description = "MLX: weights sharing one scale and bias (32, 64 or 128).")
    int groupSize = 64;

    @Option(names = "--embedding-bits", paramLabel = "N", description = "MLX: bits for the token embeddings (default: --bits).")
    Integer embeddingBits;

    @Option(names = "--keep-output", description = "MLX: leave the output projection (lm_head, or tied embeddings) unquantised.")
    boolean keepOutput;

    @Option(names = "--no-quantize", description = "MLX: write every weight as floats (see --dtype).")
    boolean noQuantize;

    @Option(names = "--scale-dtype", paramLabel = "DTYPE", description = "MLX: scales and biases as float16, bfloat16 or float32.")
    String scaleDtype = "float16";

    @Option(names = "--dtype", paramLabel = "DTYPE", description = "MLX: unquantised weights as float16, bfloat16 or float32"
            + " (default: as the source stores them; GGUF block-quantised sources become float16).")
    String dtype;

    @Option(names = "--type", paramLabel = "TYPE", description = "GGUF: matrices as f32, f16 or q8_0 (norms are always f32).")
    String type = "f16";

    @Override
    public Integer call() throws IOException {
        CliEnvironment env = main.environment();
        ModelConverter.Report report;
        switch (to.toLowerCase(java.util.Locale.ROOT)) {
            case "mlx" -> {
                MlxOptions o = MlxOptions.defaults().withFormat(bits, groupSize)
                        .withEmbeddingBits(embeddingBits == null ? 0 : embeddingBits).withKeepOutput(keepOutput)
                        .withScaleType(MlxOptions.parseDtype("--scale-dtype", scaleDtype))
                        .withFloatType(dtype == null ? null : MlxOptions.parseDtype("--dtype", dtype));
                if (noQuantize) o = o.unquantised();
                Path in = resolve(input);
                try (var bar = new LoadBar(env.err(), env.stderrIsTerminal(), "converting")) {
                    report = ModelConverter.toMlx(in, output, o, bar::update);
                }
            }
            case "gguf" -> {
                var target = ModelConverter.parseGgufType(type);
                Path in = resolve(input);
                try (var bar = new LoadBar(env.err(), env.stderrIsTerminal(), "converting")) {
                    report = ModelConverter.toGguf(in, output, target, bar::update);
                }
            }
            default -> throw new InvalidInputException("option --to must be mlx or gguf, got '" + to + "'");
        }
        env.err().println(report.summary());
        return ExitCodes.OK;
    }

    private Path resolve(String model) {
        Path p = Path.of(model.startsWith("~/") ? System.getProperty("user.home") + model.substring(1) : model);
        if (Files.isDirectory(p)) return p;
        return ModelResolver.fromEnvironment(main.environment().env()).resolve(model);
    }
}
