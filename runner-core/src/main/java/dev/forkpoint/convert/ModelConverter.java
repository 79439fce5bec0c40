package dev.forkpoint.convert;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.function.BiConsumer;
import java.util.stream.Stream;

/**
 * Moves a model between the llama.cpp path (one GGUF file) and the MLX path (an mlx-community-style folder):
 * {@link #toMlx} writes a folder from a GGUF file or re-quantises a Hugging Face / MLX folder; {@link #toGguf} writes a
 * GGUF file from a folder. Both see the model through {@link SourceModel} (Hugging Face names and row order), so any
 * source works with either writer. Outputs appear only when complete.
 */
public final class ModelConverter {
    private ModelConverter() {}

    /** What a conversion did. */
    public record Report(Path input, Path output, String target, int tensors, int quantised, List<String> notes, long bytes) {
        /** A few lines for a terminal. */
        public String summary() {
            var sb = new StringBuilder(String.format(Locale.ROOT, "convert: %s -> %s (%s): %d tensors", input, output, target, tensors));
            if (quantised > 0) sb.append(", ").append(quantised).append(" quantised");
            for (String n : notes) sb.append(System.lineSeparator()).append("  ").append(n);
            sb.append(System.lineSeparator()).append(String.format(Locale.ROOT, "  size: %.2f MiB", bytes / 1048576.0));
            return sb.toString();
        }
    }

    /** The GGUF tensor types {@code --to gguf} writes. */
    public static GgmlType parseGgufType(String name) {
        for (GgmlType t : GgufOut.TARGETS) if (t.name().equalsIgnoreCase(name)) return t;
        throw new InvalidInputException("option type must be one of f32, f16, q8_0, got '" + name + "'");
    }

    /** Opens a GGUF file or a Hugging Face / MLX folder. */
    static SourceModel open(Path input) throws IOException {
        if (Files.isDirectory(input)) return FolderSource.open(input);
        if (!Files.isRegularFile(input)) throw new InvalidInputException("input " + input + " does not exist");
        return GgufSource.open(input);
    }

    /** Writes {@code output} (a folder that must not exist or be empty) as an MLX model. */
    public static Report toMlx(Path input, Path output, MlxOptions options, BiConsumer<Integer, Integer> progress) throws IOException {
        return toMlx(input, output, options, progress, MlxWriter.SHARD_BYTES);
    }

    static Report toMlx(Path input, Path output, MlxOptions options, BiConsumer<Integer, Integer> progress, long shardBytes) throws IOException {
        checkFolderOutput(input, output);
        try (SourceModel src = open(input)) {
            Path parent = output.toAbsolutePath().normalize().getParent();
            Path tmp = Files.createTempDirectory(parent, "." + output.getFileName() + ".partial-");
            try {
                MlxWriter.Result r = MlxWriter.write(src, tmp, options, progress, shardBytes);
                if (Files.isDirectory(output)) Files.delete(output);   // checked empty above
                Files.move(tmp, output);
                String what = options.quantize() ? "mlx " + options.format().bits() + "-bit, group size " + options.format().groupSize()
                        + (options.embeddingBits() != 0 ? ", embeddings " + options.embeddingBits() + "-bit" : "")
                        + (options.keepOutput() ? ", output unquantised" : "") : "mlx, unquantised";
                return new Report(input, output, what, src.tensors().size(), r.quantised(), r.keptFloat(), r.bytes());
            } catch (IOException | RuntimeException | Error e) {
                deleteTree(tmp);
                throw e;
            }
        }
    }

    /** Writes {@code output} (a .gguf file) from a Hugging Face / MLX folder with matrices of {@code type}. */
    public static Report toGguf(Path input, Path output, GgmlType type, BiConsumer<Integer, Integer> progress) throws IOException {
        if (!GgufOut.TARGETS.contains(type)) throw new InvalidInputException("option type must be one of f32, f16, q8_0, got " + type);
        if (!Files.isDirectory(input)) {
            if (!Files.exists(input)) throw new InvalidInputException("input " + input + " does not exist");
            throw new InvalidInputException("input " + input + " is already a GGUF file; use 'forkpoint quantize' to change its types");
        }
        Path dir = output.toAbsolutePath().normalize().getParent();
        if (dir == null || !Files.isDirectory(dir)) throw new InvalidInputException("the directory of the output file " + output + " does not exist");
        if (Files.isDirectory(output)) throw new InvalidInputException("the output " + output + " is a folder; give a .gguf file name");
        try (SourceModel src = open(input)) {
            if (src.config().hybrid() != null) {
                throw new dev.forkpoint.format.ModelFormatException(input.resolve(ConfigJson.FILE), "model_type", "model type '"
                        + src.config().modelType() + "' can be converted to MLX only (--to mlx); GGUF output supports: "
                        + ConfigJson.ggufTypes());
            }
            GgufOut.Result r = GgufOut.write(src, output, type, progress);
            return new Report(input, output, "gguf " + type, src.tensors().size(), 0, r.fallbacks(), r.bytes());
        }
    }

    private static void checkFolderOutput(Path input, Path output) throws IOException {
        Path parent = output.toAbsolutePath().normalize().getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            throw new InvalidInputException("the parent folder of the output " + output + " does not exist");
        }
        if (Files.exists(output)) {
            if (Files.exists(input) && Files.isSameFile(input, output)) throw new InvalidInputException("the output " + output + " is the input; give another folder");
            if (!Files.isDirectory(output)) throw new InvalidInputException("the output " + output + " exists and is not a folder");
            try (Stream<Path> s = Files.list(output)) {
                if (s.findAny().isPresent()) throw new InvalidInputException("the output folder " + output + " is not empty; remove it or give another");
            }
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort: a partial folder is named .partial-*
                }
            });
        } catch (IOException ignored) {
            // nothing to clean
        }
    }
}
