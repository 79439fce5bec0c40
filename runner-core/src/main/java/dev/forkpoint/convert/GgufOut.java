package dev.forkpoint.convert;

import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.model.TensorRows;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.stream.IntStream;

/**
 * Writes a GGUF file from a model seen in Hugging Face terms, as llama.cpp's {@code convert_hf_to_gguf} lays it out:
 * architecture metadata under its prefix, {@code tokenizer.ggml.*}, GGUF tensor names and GGML shapes, q/k rows (and
 * biases) in the order the architecture's GGUF files keep them ({@link ConfigJson#ggufRowOrder}: Llama's interleaved), {@code rope_freqs.weight} for Llama 3 rope scaling.
 * Matrices become the target type (F32, F16 or Q8_0; a matrix whose rows do not divide into Q8_0 blocks becomes F16),
 * one-dimensional weights F32. Converted data goes through a memory-mapped scratch file beside the output.
 */
final class GgufOut {
    static final List<GgmlType> TARGETS = List.of(GgmlType.F32, GgmlType.F16, GgmlType.Q8_0);
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private GgufOut() {}

    /** What was written: matrices that could not take the target type and the type they got. */
    record Result(List<String> fallbacks, long bytes) {}

    private record Planned(String name, GgmlType type, long[] ggmlShape, TensorRows source, int[] rowOf, int[] elementOf) {}

    static Result write(SourceModel src, Path output, GgmlType target, BiConsumer<Integer, Integer> progress) throws IOException {
        ConfigJson c = src.config();
        List<Planned> plan = new ArrayList<>();
        List<String> fallbacks = new ArrayList<>();
        for (TensorRows t : src.tensors()) {
            String name = c.names().toGguf(t.name()).orElseThrow(() -> new dev.forkpoint.format.ModelFormatException(
                    src.path(), "tensor " + t.name(), "has no GGUF equivalent; cannot convert it"));
            GgmlType type = GgmlType.F32;
            if (t.isMatrix()) {
                type = target;
                if (t.cols() % target.blockSize() != 0) {
                    type = GgmlType.F16;
                    fallbacks.add(name + " (row length " + t.cols() + " is not a multiple of " + target.blockSize() + "): F16");
                }
            }
            long[] shape = new long[t.shape().length];
            for (int i = 0; i < shape.length; i++) shape[i] = t.shape()[shape.length - 1 - i];
            int[] perm = c.ggufRowOrder(t.name());
            plan.add(new Planned(name, type, shape, t, t.isMatrix() ? perm : null, t.isMatrix() ? null : perm));
        }

        Map<String, MetadataValue> meta = new LinkedHashMap<>(c.ggufMetadata(name(src.path())));
        meta.put("general.file_type", MetadataValue.ofU32(ModelQuantizer.fileType(target)));
        if (target.blockSize() > 1) meta.put("general.quantization_version", MetadataValue.ofU32(2));
        meta.putAll(src.tokenizerMetadata());

        float[] ropeFactors = c.ropeScaling() == null ? null : c.ropeScaling().factors(c.headDim(), c.ropeTheta());
        long scratchBytes = ropeFactors == null ? 0 : 4L * ropeFactors.length;
        for (Planned p : plan) scratchBytes += p.type.bytesFor(p.source.rows() * (long) p.source.cols());
        Path dir = output.toAbsolutePath().getParent();
        Path scratch = Files.createTempFile(dir, "." + output.getFileName() + ".", ".scratch");
        try (Arena arena = Arena.ofShared();
             FileChannel ch = FileChannel.open(scratch, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment data = scratchBytes == 0 ? MemorySegment.NULL : ch.map(FileChannel.MapMode.READ_WRITE, 0, scratchBytes, arena);
            var writer = new GgufWriter().putAll(meta);
            long at = 0;
            if (ropeFactors != null) {
                MemorySegment dst = data.asSlice(at, 4L * ropeFactors.length);
                MemorySegment.copy(ropeFactors, 0, dst, F32_LE, 0, ropeFactors.length);
                at += dst.byteSize();
                writer.add(new GgufWriter.TensorData("rope_freqs.weight", GgmlType.F32, new long[]{ropeFactors.length}, dst));
            }
            int done = 0;
            for (Planned p : plan) {
                long bytes = p.type.bytesFor(p.source.rows() * (long) p.source.cols());
                MemorySegment dst = data.asSlice(at, bytes);
                at += bytes;
                fill(p, dst);
                writer.add(new GgufWriter.TensorData(p.name, p.type, p.ggmlShape, dst));
                progress.accept(++done, plan.size());
            }
            writer.write(output);
        } finally {
            Files.deleteIfExists(scratch);
        }
        return new Result(List.copyOf(fallbacks), Files.size(output));
    }

    private static void fill(Planned p, MemorySegment dst) {
        TensorRows t = p.source;
        int cols = t.cols();
        long rowBytes = p.type.bytesFor(cols);
        if (p.elementOf != null) {   // a permuted bias: element i of the GGUF vector is HF element elementOf[i]
            float[] v = new float[cols], g = new float[cols];
            t.read(0, v);
            for (int i = 0; i < cols; i++) g[i] = v[p.elementOf[i]];
            Quantization.quantize(p.type, g, 0, cols, dst, 0);
            return;
        }
        int rows = t.rows();
        int tasks = (rows + 15) / 16;
        IntStream.range(0, tasks).parallel().forEach(task -> {
            float[] row = new float[cols];
            for (int r = task * 16; r < Math.min(rows, task * 16 + 16); r++) {
                t.read(p.rowOf == null ? r : p.rowOf[r], row);
                Quantization.quantize(p.type, row, 0, cols, dst, r * rowBytes);
            }
        });
    }

    /** The model's name for {@code general.name}: the folder or file name. */
    private static String name(Path p) {
        Path n = p.toAbsolutePath().normalize().getFileName();
        return n == null ? "model" : n.toString().replaceFirst("\\.gguf$", "");
    }
}
