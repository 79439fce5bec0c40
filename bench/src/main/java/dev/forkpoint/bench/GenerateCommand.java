package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code forkpoint bench generate}: writes a seeded random-weight GGUF. */
@Command(name = "generate", mixinStandardHelpOptions = true,
        description = "Write a seeded random-weight Llama GGUF (tied embeddings, byte-level Llama 3-style vocabulary).")
final class GenerateCommand implements Callable<Integer> {
    @Option(names = "--shape", defaultValue = "llama-3.2-1b", description = "llama-3.2-1b, tiny or long-context (default: ${DEFAULT-VALUE})")
    String shape;

    @Option(names = "--type", defaultValue = "q8_0", description = "f16, q8_0, q4_0 or q4_k_m (default: ${DEFAULT-VALUE})")
    String type;

    @Option(names = "--out", required = true, description = "the GGUF file to write")
    Path out;

    @Option(names = "--seed", defaultValue = "42", description = "weights depend only on shape, type and seed (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--rope-freqs", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "write rope_freqs.weight (Llama 3 RoPE scaling) when the shape has it (default: ${DEFAULT-VALUE})")
    boolean ropeFreqs;

    @Option(names = "--threads", description = "generator threads (default: all processors)")
    int threads = Runtime.getRuntime().availableProcessors();

    @Override
    public Integer call() throws Exception {
        var writer = new SyntheticModelWriter(ModelShape.byName(shape), FileType.parse(type), seed, ropeFreqs, threads);
        SyntheticModelWriter.Written w;
        try {
            w = writer.write(out);
        } catch (UnsupportedOperationException e) {
            throw new InvalidInputException("cannot write --type " + type + ": " + e.getMessage(), e);
        }
        System.out.printf(Locale.ROOT, "wrote %s: %d tensors, %,d parameters, %,d bytes (%.2f GB) in %.1f s%n",
                w.path(), w.tensors(), w.parameters(), w.bytes(), w.bytes() / 1e9, w.nanos() / 1e9);
        return 0;
    }
}
