package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.safetensors.SafetensorsDtype;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsWriter;
import dev.forkpoint.model.TensorRows;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiConsumer;

/**
 * Writes an mlx-community-style model folder: {@code config.json} (Hugging Face keys plus {@code quantization} and
 * {@code quantization_config}), {@code model.safetensors} with {@code __metadata__ {"format": "mlx"}} (split into
 * {@code model-0000i-of-0000n.safetensors} shards of at most 5 GiB, as mlx-lm does; {@code model.safetensors.index.json}
 * always lists the tensors), and the tokenizer files.
 *
 * <p>Which weights are quantised follows mlx-lm: every Linear/Embedding matrix whose input dimension (last axis) is a
 * multiple of its group size; norms and biases stay float. A quantised module {@code X} is stored as {@code X.weight}
 * (U32 codes, [rows, cols·bits/32]), {@code X.scales} and {@code X.biases} ([rows, cols/group], the scale dtype), exactly
 * as {@link AffineCodec#quantize} gives them. Modules quantised with other parameters than the default get an entry
 * {@code {"group_size": g, "bits": b}} under their module path in the quantization block; modules left unquantised
 * (output kept, or a dimension that does not divide into groups) get {@code false}.
 *
 * <p>Qwen3.5 hybrids ({@code qwen3_5}, {@code qwen3_5_moe}) keep their config.json as it is (plus the quantization
 * block) and their tensor names, but for the experts, which take mlx-lm's stacked {@code switch_mlp} layout
 * ({@link MlxHybridLayout}) and are quantised as [E, out, in] (codes [E, out, in·bits/32], scales and biases
 * [E, out, in/group]). As mlx-lm does, a mixture's router ({@code mlp.gate}) gets 8 bits and group size 64 whatever
 * the rest gets (a per-module entry); the shared-expert gate stays float (Forkpoint reads it as floats). The
 * convolution (three-dimensional), A_log, dt_bias and the norms are copied as they are.
 *
 * <p>Memory stays bounded: every tensor is produced row by row while its bytes are written.
 */
final class MlxWriter {
    /** mlx-lm's shard limit (5 GiB). */
    static final long SHARD_BYTES = 5L << 30;
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private MlxWriter() {}

    private record Entry(String name, SafetensorsDtype dtype, long[] shape, long bytes, SafetensorsWriter.DataWriter data) {}

    /** What was written. */
    record Result(int quantised, List<String> keptFloat, long bytes) {}

    static Result write(SourceModel src, Path folder, MlxOptions o, BiConsumer<Integer, Integer> progress) throws IOException {
        return write(src, folder, o, progress, SHARD_BYTES);
    }

    /** As above with shards of at most {@code shardBytes} (tests use small ones). */
    static Result write(SourceModel src, Path folder, MlxOptions o, BiConsumer<Integer, Integer> progress, long shardBytes) throws IOException {
        ConfigJson c = src.config();
        ObjectNode q = JSON.createObjectNode();
        q.put("group_size", o.format().groupSize());
        q.put("bits", o.format().bits());
        q.put("mode", "affine");
        List<Entry> entries = new ArrayList<>();
        List<String> kept = new ArrayList<>();
        int quantised = 0;
        List<TensorRows> tensors = c.hybrid() != null ? MlxHybridLayout.tensors(src.tensors()) : src.tensors();
        int total = tensors.size();
        int[] done = {0};
        GgmlType mainFloat = null;
        for (TensorRows t : tensors) {
            String module = t.module();
            String canonical = c.canonicalName(module);
            boolean stacked = c.hybrid() != null && t.shape().length == 3 && canonical.contains(".mlp.switch_mlp.");
            boolean linear = (t.isMatrix() || stacked) && t.name().endsWith(".weight");
            boolean output = canonical.equals("lm_head") || (c.tieWordEmbeddings() && canonical.equals("model.embed_tokens"));
            boolean router = c.hybrid() != null && canonical.endsWith(".mlp.gate");
            boolean sharedGate = c.hybrid() != null && canonical.endsWith(".mlp.shared_expert_gate");
            AffineFormat f = canonical.equals("model.embed_tokens") && o.embeddingBits() != 0
                    ? new AffineFormat(o.embeddingBits(), o.format().groupSize())
                    : router ? ROUTER : o.format();
            Runnable tick = () -> progress.accept(++done[0], total);
            if (linear && o.quantize()) {
                if (o.keepOutput() && output) {
                    quantKey(q, c, module, false);
                    kept.add(module + ": output kept unquantised");
                } else if (sharedGate) {
                    // mlx-lm gives it 8 bits; Forkpoint's loader reads this 1×H gate as floats
                    quantKey(q, c, module, false);
                    kept.add(module + ": shared-expert gate kept unquantised");
                } else if (t.cols() % f.groupSize() != 0) {
                    quantKey(q, c, module, false);
                    kept.add(module + ": input dimension " + t.cols() + " is not a multiple of the group size " + f.groupSize());
                } else {
                    if (!f.equals(o.format()) || router) quantKey(q, c, module, f);
                    addAffine(entries, t, f, o.scaleType(), tick);
                    quantised++;
                    continue;
                }
            }
            GgmlType type = o.floatType() != null ? o.floatType() : t.floatType() != null ? t.floatType() : GgmlType.F16;
            if (mainFloat == null || canonical.equals("model.embed_tokens")) mainFloat = type;
            addFloat(entries, t, type, tick);
        }
        ObjectNode config = c.withDtype(MlxOptions.dtypeName(quantised > 0 ? o.scaleType() : mainFloat))
                .toJson(o.quantize() ? q : null);
        writeShards(folder, entries, shardBytes);
        JSON.writeValue(folder.resolve(ConfigJson.FILE).toFile(), config);
        src.writeTokenizerFiles(folder);
        long bytes = entries.stream().mapToLong(Entry::bytes).sum();
        return new Result(quantised, List.copyOf(kept), bytes);
    }

    /** mlx-lm's quantisation of a mixture's router ({@code mlp.gate}) whatever the rest gets: 8 bits, group size 64. */
    static final AffineFormat ROUTER = new AffineFormat(8, 64);

    /**
     * A per-module entry of the quantization block: {@code false}, or the module's own bits and group size. A
     * hybrid's entry is written under the module's name in the folder and, where it differs, under mlx-lm's module
     * path ({@code language_model.model.…}), so that both loaders find it.
     */
    private static void quantKey(ObjectNode q, ConfigJson c, String module, Object value) {
        List<String> keys = new ArrayList<>(List.of(module));
        String mlxLm = HybridConfig.mlxLmPath(c.canonicalName(module));
        if (c.hybrid() != null && !mlxLm.equals(module)) keys.add(mlxLm);
        for (String k : keys) {
            if (value instanceof AffineFormat f) q.putObject(k).put("group_size", f.groupSize()).put("bits", f.bits());
            else q.put(k, false);
        }
    }

    private static void addFloat(List<Entry> entries, TensorRows t, GgmlType type, Runnable tick) {
        int rows = t.rows(), cols = t.cols();
        long rowBytes = type.bytesFor(cols);
        entries.add(new Entry(t.name(), SafetensorsDtype.of(type), t.shape(), rowBytes * rows, out -> {
            inChunks(t, out, row -> {
                byte[] buf = new byte[Math.toIntExact(rowBytes)];
                Quantization.quantize(type, row, 0, cols, java.lang.foreign.MemorySegment.ofArray(buf), 0);
                return buf;
            });
            tick.run();
        }));
    }

    /** Rows per parallel chunk: bounded memory (a chunk's bytes), rows produced on the common pool, written in order. */
    private static final int CHUNK_ROWS = 256;

    /** Writes {@code encode}(row) for every row of {@code t}, in order, rows of a chunk computed in parallel. */
    private static void inChunks(TensorRows t, OutputStream out, java.util.function.Function<float[], byte[]> encode) throws IOException {
        int rows = t.rows(), cols = t.cols();
        for (int start = 0; start < rows; start += CHUNK_ROWS) {
            int s0 = start, n = Math.min(CHUNK_ROWS, rows - start);
            byte[][] chunk = new byte[n][];
            java.util.stream.IntStream.range(0, n).parallel().forEach(i -> {
                float[] row = new float[cols];
                t.read(s0 + i, row);
                chunk[i] = encode.apply(row);
            });
            for (byte[] b : chunk) out.write(b);
        }
    }

    private static void addAffine(List<Entry> entries, TensorRows t, AffineFormat f, GgmlType scaleType, Runnable tick) {
        int rows = t.rows(), cols = t.cols();
        String module = t.module();
        long words = f.packedWordsPerRow(cols);
        int groups = f.groupsPerRow(cols);
        long scaleBytes = (long) rows * groups * (scaleType == GgmlType.F32 ? 4 : 2);
        entries.add(new Entry(module + ".weight", SafetensorsDtype.U32, lastAxis(t.shape(), words), rows * words * 4,
                out -> rows(t, f, scaleType, out, AffineCodec.AffineArrays::packedBytes, null)));
        entries.add(new Entry(module + ".scales", SafetensorsDtype.of(scaleType), lastAxis(t.shape(), groups), scaleBytes,
                out -> rows(t, f, scaleType, out, a -> a.scaleBytes(scaleType), null)));
        entries.add(new Entry(module + ".biases", SafetensorsDtype.of(scaleType), lastAxis(t.shape(), groups), scaleBytes,
                out -> rows(t, f, scaleType, out, a -> a.biasBytes(scaleType), tick)));
    }

    /** {@code shape} with its last axis replaced by {@code n} ([rows, n], or [E, out, n] for stacked experts). */
    private static long[] lastAxis(long[] shape, long n) {
        long[] s = shape.clone();
        s[s.length - 1] = n;
        return s;
    }

    /** Quantises {@code t} row by row, writing the part {@code part} selects of each row. */
    private static void rows(TensorRows t, AffineFormat f, GgmlType scaleType, OutputStream out,
                             java.util.function.Function<AffineCodec.AffineArrays, byte[]> part, Runnable after) throws IOException {
        int cols = t.cols();
        inChunks(t, out, row -> {
            try {
                return part.apply(AffineCodec.quantize(row, 1, cols, f, scaleType));
            } catch (InvalidInputException e) {
                throw new InvalidInputException(t.origin() + ": " + e.getMessage());
            }
        });
        if (after != null) after.run();
    }

    private static void writeShards(Path folder, List<Entry> entries, long shardBytes) throws IOException {
        List<List<Entry>> shards = new ArrayList<>();
        long size = 0;
        for (Entry e : entries) {
            if (shards.isEmpty() || (size + e.bytes > shardBytes && size > 0)) {
                shards.add(new ArrayList<>());
                size = 0;
            }
            shards.getLast().add(e);
            size += e.bytes;
        }
        if (shards.isEmpty()) shards.add(new ArrayList<>());
        Map<String, String> weightMap = new TreeMap<>();
        long total = 0;
        for (int i = 0; i < shards.size(); i++) {
            String name = shards.size() == 1 ? SafetensorsShards.SINGLE
                    : String.format(java.util.Locale.ROOT, "model-%05d-of-%05d.safetensors", i + 1, shards.size());
            var w = new SafetensorsWriter().metadata("format", "mlx");
            for (Entry e : shards.get(i)) {
                w.tensor(e.name, e.dtype, e.shape, e.data, e.bytes);
                weightMap.put(e.name, name);
                total += e.bytes;
            }
            w.write(folder.resolve(name));
        }
        ObjectNode index = JSON.createObjectNode();
        index.putObject("metadata").put("total_size", total);
        ObjectNode map = index.putObject("weight_map");
        weightMap.forEach(map::put);
        JSON.writeValue(folder.resolve(SafetensorsShards.INDEX).toFile(), index);
    }
}
