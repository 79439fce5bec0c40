package dev.forkpoint.convert;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * Rewrites a GGUF model with its weight matrices in another tensor type, like llama.cpp's {@code llama-quantize}
 * with one type for every matrix. All metadata is copied; {@code general.file_type} is set to llama.cpp's
 * {@code llama_ftype} for the target (and {@code general.quantization_version} to 2 for block-quantized targets).
 *
 * <p>Which tensors change: every tensor of two or more dimensions whose row length is a multiple of the target's
 * block size is converted (source rows are dequantized to floats, then packed). One-dimensional tensors (norms,
 * biases) and matrices whose rows do not divide into blocks keep their type; the {@link Report} lists the latter.
 *
 * <p>Memory stays bounded by the page cache, not the heap: converted tensors are packed into a memory-mapped scratch
 * file beside the output (removed afterwards), row by row with one row buffer per worker, and unchanged tensors
 * are written straight from the input's mapping.
 */
public final class ModelQuantizer {
    /** The tensor types {@code quantize} can produce. */
    public static final Set<GgmlType> TARGETS = EnumSet.of(GgmlType.F32, GgmlType.F16, GgmlType.Q8_0, GgmlType.Q4_0,
            GgmlType.Q4_K, GgmlType.Q6_K);

    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int ROWS_PER_TASK = 16;

    /** A tensor left in its type, and why. */
    public record Kept(String name, GgmlType type, long[] shape, String reason) {}

    /**
     * What a conversion did.
     *
     * @param converted tensors now of the target type (including ones that already were)
     * @param kept      one-dimensional tensors and matrices whose rows do not divide into target blocks
     */
    public record Report(Path input, Path output, GgmlType target, int converted, List<Kept> kept, long inputBytes,
                         long outputBytes) {
        /** Kept tensors of two or more dimensions: matrices that could not be converted. */
        public List<Kept> keptMatrices() { return kept.stream().filter(k -> k.shape().length >= 2).toList(); }

        /** A few lines for a terminal. */
        public String summary() {
            var sb = new StringBuilder();
            sb.append(String.format(java.util.Locale.ROOT, "quantize: %s -> %s (%s): %d tensors converted, %d kept (%d one-dimensional)%n",
                    input, output, target, converted, kept.size(), kept.size() - keptMatrices().size()));
            for (Kept k : keptMatrices()) {
                sb.append("  kept ").append(k.name()).append(' ').append(shapeString(k.shape())).append(" in ")
                        .append(k.type()).append(": ").append(k.reason()).append(System.lineSeparator());
            }
            sb.append(String.format(java.util.Locale.ROOT, "  size: %.2f MiB -> %.2f MiB", inputBytes / 1048576.0, outputBytes / 1048576.0));
            return sb.toString();
        }
    }

    private ModelQuantizer() {}

    /** llama.cpp's {@code llama_ftype} for a file whose matrices are all {@code type}. */
    public static int fileType(GgmlType type) {
        return switch (type) {
            case F32 -> 0;     // LLAMA_FTYPE_ALL_F32
            case F16 -> 1;     // LLAMA_FTYPE_MOSTLY_F16
            case Q4_0 -> 2;    // LLAMA_FTYPE_MOSTLY_Q4_0
            case Q8_0 -> 7;    // LLAMA_FTYPE_MOSTLY_Q8_0
            case Q4_K -> 14;   // LLAMA_FTYPE_MOSTLY_Q4_K_S
            case Q6_K -> 18;   // LLAMA_FTYPE_MOSTLY_Q6_K
            default -> throw new InvalidInputException("cannot quantize to " + type + "; supported: " + targetNames());
        };
    }

    /** "f32, f16, q8_0, …": the accepted {@code --type} values. */
    public static String targetNames() {
        return String.join(", ", TARGETS.stream().map(t -> t.name().toLowerCase(java.util.Locale.ROOT)).toList());
    }

    /** Parses a target type name ("q8_0"), refusing types {@code quantize} cannot produce. */
    public static GgmlType parseTarget(String name) {
        for (GgmlType t : TARGETS) {
            if (t.name().equalsIgnoreCase(name)) return t;
        }
        throw new InvalidInputException("option type must be one of " + targetNames() + ", got '" + name + "'");
    }

    /** Converts {@code input} into {@code output} (written atomically). */
    public static Report quantize(Path input, Path output, GgmlType target) throws IOException {
        return quantize(input, output, target, (done, total) -> {});
    }

    /** As {@link #quantize(Path, Path, GgmlType)}, telling {@code progress} (done, total) as each tensor is prepared. */
    public static Report quantize(Path input, Path output, GgmlType target, java.util.function.BiConsumer<Integer, Integer> progress)
            throws IOException {
        fileType(target);
        if (Files.exists(output) && Files.isSameFile(input, output)) {
            throw new InvalidInputException("the output file " + output + " is the input file; give another name");
        }
        Path dir = output.toAbsolutePath().getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw new InvalidInputException("the directory of the output file " + output + " does not exist");
        }
        try (GgufFile in = GgufFile.open(input)) {
            List<GgufTensor> convert = new ArrayList<>();
            List<Kept> kept = new ArrayList<>();
            for (GgufTensor t : in.tensors()) {
                if (t.shape().length < 2) {
                    kept.add(new Kept(t.name(), t.type(), t.shape(), "one-dimensional"));
                } else if (t.rowLength() % target.blockSize() != 0) {
                    kept.add(new Kept(t.name(), t.type(), t.shape(), "row length " + t.rowLength()
                            + " is not a multiple of the " + target + " block size " + target.blockSize()));
                } else {
                    if (t.type() != target && t.type() != GgmlType.F32 && t.type() != GgmlType.F16 && t.type() != GgmlType.BF16
                            && !t.type().supported()) {
                        throw new InvalidInputException(input + ": tensor " + t.name() + " is " + t.type()
                                + ", which Forkpoint cannot read (supported: " + GgmlType.supportedNames() + ")");
                    }
                    convert.add(t);
                }
            }
            Set<String> convertNames = new java.util.HashSet<>();
            for (GgufTensor t : convert) convertNames.add(t.name());
            long scratchBytes = 0;
            for (GgufTensor t : convert) scratchBytes += target.bytesFor(t.elementCount());

            Map<String, MetadataValue> metadata = new LinkedHashMap<>(in.metadata());
            metadata.put("general.file_type", MetadataValue.ofU32(fileType(target)));
            if (target.blockSize() > 1) metadata.put("general.quantization_version", MetadataValue.ofU32(2));
            else metadata.remove("general.quantization_version");

            Path scratch = Files.createTempFile(dir, "." + output.getFileName() + ".", ".scratch");
            try (Arena arena = Arena.ofShared();
                 FileChannel ch = FileChannel.open(scratch, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                MemorySegment packed = scratchBytes == 0 ? MemorySegment.NULL
                        : ch.map(FileChannel.MapMode.READ_WRITE, 0, scratchBytes, arena);
                deleteQuietly(scratch);   // where the OS allows it, the mapping outlives the name: nothing is left on a crash
                var writer = new GgufWriter().putAll(metadata);
                long at = 0;
                int done = 0;
                int total = in.tensors().size();
                for (GgufTensor t : in.tensors()) {
                    if (convertNames.contains(t.name())) {
                        long bytes = target.bytesFor(t.elementCount());
                        MemorySegment dst = packed.asSlice(at, bytes);
                        at += bytes;
                        if (t.type() == target) MemorySegment.copy(t.data(), 0, dst, 0, bytes);
                        else convertRows(t, target, dst);
                        writer.add(new GgufWriter.TensorData(t.name(), target, t.shape(), dst));
                    } else {
                        writer.add(new GgufWriter.TensorData(t.name(), t.type(), t.shape(), t.data()));
                    }
                    progress.accept(++done, total);
                }
                writer.write(output);
            } finally {
                Files.deleteIfExists(scratch);
            }
            return new Report(input, output, target, convert.size(), List.copyOf(kept), Files.size(input), Files.size(output));
        }
    }

    /** Converts every row of {@code t} into {@code dst} (sized for {@code target}), rows split across the common pool. */
    private static void convertRows(GgufTensor t, GgmlType target, MemorySegment dst) {
        int rowLength = t.rowLength();
        int rows = t.rows();
        long srcRowBytes = t.type().bytesFor(rowLength);
        long dstRowBytes = target.bytesFor(rowLength);
        int tasks = (rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
        IntStream.range(0, tasks).parallel().forEach(task -> {
            float[] row = new float[rowLength];
            int end = Math.min(rows, (task + 1) * ROWS_PER_TASK);
            for (int r = task * ROWS_PER_TASK; r < end; r++) {
                readRow(t, r * srcRowBytes, row);
                writeRow(target, row, dst, r * dstRowBytes);
            }
        });
    }

    private static void readRow(GgufTensor t, long offset, float[] row) {
        MemorySegment src = t.data();
        switch (t.type()) {
            case F32 -> MemorySegment.copy(src, F32_LE, offset, row, 0, row.length);
            case F16 -> {
                for (int i = 0; i < row.length; i++) row[i] = Float.float16ToFloat(src.get(I16_LE, offset + 2L * i));
            }
            case BF16 -> {
                for (int i = 0; i < row.length; i++) row[i] = Float.intBitsToFloat(src.get(I16_LE, offset + 2L * i) << 16);
            }
            default -> Quantization.dequantize(t.type(), src, offset, row, 0, row.length);
        }
    }

    private static void writeRow(GgmlType target, float[] row, MemorySegment dst, long offset) {
        switch (target) {
            case F32 -> MemorySegment.copy(row, 0, dst, F32_LE, offset, row.length);
            case F16 -> {
                for (int i = 0; i < row.length; i++) dst.set(I16_LE, offset + 2L * i, Float.floatToFloat16(row[i]));
            }
            default -> Quantization.quantize(target, row, 0, row.length, dst, offset);
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // Windows keeps mapped files; the finally block removes it once unmapped
        }
    }

    static String shapeString(long[] shape) {
        var sb = new StringBuilder("[");
        for (int i = 0; i < shape.length; i++) sb.append(i > 0 ? ", " : "").append(shape[i]);
        return sb.append(']').toString();
    }
}
