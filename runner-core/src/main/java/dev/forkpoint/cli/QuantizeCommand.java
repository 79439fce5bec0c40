package dev.forkpoint.cli;

import dev.forkpoint.convert.ModelQuantizer;
import dev.forkpoint.store.ModelResolver;
import dev.forkpoint.tensor.GgmlType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code forkpoint quantize IN OUT --type T}: a copy of a model with its weight matrices in another type. */
@Command(name = "quantize", mixinStandardHelpOptions = true, showDefaultValues = true,
        description = "Write a copy of a GGUF model with its weight matrices converted to another type"
                + " (norms and matrices whose rows do not divide into blocks are kept as they are).")
final class QuantizeCommand implements Callable<Integer> {
    @ParentCommand
    Main main;

    @Parameters(index = "0", paramLabel = "IN", description = "The model: a .gguf file or an Ollama model name.")
    String input;

    @Parameters(index = "1", paramLabel = "OUT", description = "The .gguf file to write.")
    Path output;

    @Option(names = "--type", paramLabel = "TYPE", description = "f32, f16, q8_0, q4_0, q4_k or q6_k.")
    String type = "q8_0";

    @Override
    public Integer call() throws IOException {
        CliEnvironment env = main.environment();
        GgmlType target = ModelQuantizer.parseTarget(type);
        Path in = ModelResolver.fromEnvironment(env.env()).resolve(input);
        ModelQuantizer.Report report;
        try (var bar = new LoadBar(env.err(), env.stderrIsTerminal(), "quantizing")) {
            report = ModelQuantizer.quantize(in, output, target, bar::update);
        }
        env.err().println(report.summary());
        return ExitCodes.OK;
    }
}
