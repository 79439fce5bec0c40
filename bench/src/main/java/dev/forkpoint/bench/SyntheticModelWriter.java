package dev.forkpoint.bench;

import dev.forkpoint.format.gguf.MetadataType;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Writes a seeded random-weight GGUF of a {@link ModelShape} in a {@link FileType}. The output depends only on the
 * shape, file type, seed and RoPE-factor choice (not on the thread count): each tensor is cut into fixed row
 * chunks, each seeded by (seed, tensor, chunk).
 *
 * <p>Memory stays bounded whatever the model size: the header is written first ({@link GgufStreamWriter}), then
 * tensors one at a time, chunk by chunk: each thread fills a float chunk (~1 MB), encodes it into its own off-heap
 * buffer and writes it at its place in the file. Nothing is memory-mapped.
 */
final class SyntheticModelWriter {
    /** Target floats per chunk (whole rows, at least one). */
    static final int CHUNK_ELEMENTS = 1 << 18;
    static final float WEIGHT_STD = 0.02f;
    static final float NORM_STD = 0.02f;
    /**
     * Control-token rows of the tied embedding are scaled down by this, so their logits stay far below the others and
     * a greedy decode never ends early on EOS (keeping generated token counts equal across engines).
     */
    static final float SPECIAL_ROW_SCALE = 1f / 64;
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** What was written. */
    record Written(Path path, long bytes, int tensors, long parameters, long nanos) {}

    private final ModelShape shape;
    private final FileType fileType;
    private final long seed;
    private final boolean ropeFreqs;
    private final int threads;

    SyntheticModelWriter(ModelShape shape, FileType fileType, long seed, boolean ropeFreqs, int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        this.shape = shape;
        this.fileType = fileType;
        this.seed = seed;
        this.ropeFreqs = ropeFreqs;
        this.threads = threads;
    }

    List<TensorPlan> plans() {
        return TensorPlan.forModel(shape, fileType, ropeFreqs);
    }

    Written write(Path out) throws IOException {
        long start = System.nanoTime();
        List<TensorPlan> plans = plans();
        Path absolute = out.toAbsolutePath();
        if (absolute.getParent() != null) Files.createDirectories(absolute.getParent());
        List<GgufStreamWriter.TensorInfo> infos = plans.stream()
                .map(p -> new GgufStreamWriter.TensorInfo(p.name(), p.type(), p.shape())).toList();
        int maxRow = plans.stream().mapToInt(TensorPlan::rowLength).max().orElse(1);
        long bufferBytes = 4L * Math.max(maxRow, CHUNK_ELEMENTS);
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> Thread.ofPlatform().daemon().name("generate").unstarted(r));
        try (Arena buffers = Arena.ofShared(); var file = GgufStreamWriter.create(absolute, metadata(), infos)) {
            ThreadLocal<MemorySegment> buffer = ThreadLocal.withInitial(() -> buffers.allocate(bufferBytes, 64));
            for (int i = 0; i < plans.size(); i++) fill(i, plans.get(i), file, buffer, pool);
            file.commit();
        } finally {
            pool.shutdownNow();
        }
        long params = plans.stream().mapToLong(TensorPlan::elements).sum();
        return new Written(absolute, Files.size(absolute), plans.size(), params, System.nanoTime() - start);
    }

    /** The metadata llama.cpp and Forkpoint read for a Llama-architecture model with a Llama 3-style vocabulary. */
    Map<String, MetadataValue> metadata() {
        var m = new LinkedHashMap<String, MetadataValue>();
        m.put("general.architecture", MetadataValue.of("llama"));
        m.put("general.name", MetadataValue.of("forkpoint-random " + shape.name() + " " + fileType.cliName() + " seed " + seed));
        m.put("general.file_type", MetadataValue.ofU32(fileType.ggufId()));
        if (fileType != FileType.F16) m.put("general.quantization_version", MetadataValue.ofU32(2));
        m.put("llama.vocab_size", MetadataValue.ofU32(shape.vocabSize()));
        m.put("llama.context_length", MetadataValue.ofU32(shape.contextLength()));
        m.put("llama.embedding_length", MetadataValue.ofU32(shape.dim()));
        m.put("llama.block_count", MetadataValue.ofU32(shape.layers()));
        m.put("llama.feed_forward_length", MetadataValue.ofU32(shape.ffnDim()));
        m.put("llama.attention.head_count", MetadataValue.ofU32(shape.headCount()));
        m.put("llama.attention.head_count_kv", MetadataValue.ofU32(shape.kvHeadCount()));
        m.put("llama.attention.key_length", MetadataValue.ofU32(shape.headDim()));
        m.put("llama.attention.value_length", MetadataValue.ofU32(shape.headDim()));
        m.put("llama.rope.dimension_count", MetadataValue.ofU32(shape.headDim()));
        m.put("llama.rope.freq_base", MetadataValue.ofF32(shape.ropeFreqBase()));
        m.put("llama.attention.layer_norm_rms_epsilon", MetadataValue.ofF32(shape.rmsEps()));
        ByteLevelVocab vocab = ByteLevelVocab.forShape(shape);
        m.put("tokenizer.ggml.model", MetadataValue.of("gpt2"));
        m.put("tokenizer.ggml.pre", MetadataValue.of("llama-bpe"));
        m.put("tokenizer.ggml.tokens", MetadataValue.ofStrings(vocab.tokens()));
        m.put("tokenizer.ggml.token_type", MetadataValue.ofI32s(vocab.tokenTypes()));
        m.put("tokenizer.ggml.merges", new MetadataValue.Array(MetadataType.STRING, List.of()));
        m.put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(shape.bosId()));
        m.put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(shape.eosId()));
        m.put("tokenizer.ggml.add_bos_token", MetadataValue.ofBool(true));
        m.put("tokenizer.ggml.add_eos_token", MetadataValue.ofBool(false));
        return m;
    }

    /** Generates tensor {@code tensorIndex} chunk by chunk on {@code pool}, each chunk encoded into a per-thread buffer. */
    private void fill(int tensorIndex, TensorPlan plan, GgufStreamWriter file, ThreadLocal<MemorySegment> buffer,
                      ExecutorService pool) throws IOException {
        if (plan.role() == TensorRole.ROPE_FREQS) {
            float[] factors = shape.ropeScaling().orElseThrow().factors(shape.headDim(), shape.ropeFreqBase());
            ByteBuffer bytes = ByteBuffer.allocate(4 * factors.length).order(ByteOrder.LITTLE_ENDIAN);
            for (float f : factors) bytes.putFloat(f);
            file.write(tensorIndex, 0, bytes.flip());
            return;
        }
        int rowLength = plan.rowLength();
        long rows = plan.rows();
        int rowsPerChunk = Math.max(1, CHUNK_ELEMENTS / rowLength);
        long chunks = (rows + rowsPerChunk - 1) / rowsPerChunk;
        long rowBytes = plan.type().bytesFor(rowLength);
        var futures = new ArrayList<Future<?>>();
        for (long c = 0; c < chunks; c++) {
            long chunk = c;
            futures.add(pool.submit(() -> {
                long firstRow = chunk * rowsPerChunk;
                int n = (int) Math.min(rowsPerChunk, rows - firstRow);
                float[] values = chunkValues(tensorIndex, chunk, plan, firstRow, n);
                MemorySegment dst = buffer.get();
                long bytes = n * rowBytes;
                encode(plan.type(), values, n * rowLength, dst, 0);
                file.write(tensorIndex, firstRow * rowBytes, dst.asSlice(0, bytes).asByteBuffer());
                return null;
            }));
        }
        for (Future<?> f : futures) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while generating " + plan.name(), e);
            } catch (ExecutionException e) {
                switch (e.getCause()) {
                    case RuntimeException re -> throw re;
                    case IOException io -> throw io;
                    default -> throw new IllegalStateException("generating " + plan.name() + " failed", e.getCause());
                }
            }
        }
    }

    /** The float values of rows [firstRow, firstRow + n) of a tensor. */
    private float[] chunkValues(int tensorIndex, long chunk, TensorPlan plan, long firstRow, int n) {
        int rowLength = plan.rowLength();
        float[] values = new float[n * rowLength];
        var random = new SeededValues(SeededValues.chunkSeed(seed, tensorIndex, chunk));
        boolean norm = plan.type() == GgmlType.F32;
        random.fillNormal(values, 0, values.length, norm ? NORM_STD : WEIGHT_STD);
        if (norm) {
            for (int i = 0; i < values.length; i++) values[i] += 1f;
        }
        if (plan.role() == TensorRole.TOKEN_EMBD) {
            for (int r = 0; r < n; r++) {
                if (firstRow + r < shape.firstSpecialId()) continue;
                for (int i = r * rowLength; i < (r + 1) * rowLength; i++) values[i] *= SPECIAL_ROW_SCALE;
            }
        }
        return values;
    }

    private static void encode(GgmlType type, float[] values, int count, MemorySegment dst, long offset) {
        switch (type) {
            case F32 -> MemorySegment.copy(values, 0, dst, F32_LE, offset, count);
            case F16 -> {
                short[] halves = new short[count];
                for (int i = 0; i < count; i++) halves[i] = Float.floatToFloat16(values[i]);
                MemorySegment.copy(halves, 0, dst, I16_LE, offset, count);
            }
            default -> Quantization.quantize(type, values, 0, count, dst, offset);
        }
    }

    private static long alignUp(long v, long alignment) {
        return (v + alignment - 1) / alignment * alignment;
    }
}
