package dev.forkpoint.store;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataType;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tokenizer.ByteUnicode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.channels.FileChannel;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The model every command uses when no {@code --model} is given: a tiny Llama with random weights drawn from a fixed
 * seed, so that Forkpoint works out of the box with nothing downloaded. Its output is gibberish, by design.
 *
 * <p>The file is generated on first use into the user's cache directory and reused afterwards. Generation is
 * deterministic: the same {@link #FORMAT_VERSION} always produces the same bytes. Shape: dim {@value #DIM},
 * {@value #LAYERS} layers, {@value #HEADS} heads ({@value #KV_HEADS} KV heads), FFN {@value #FFN}, context
 * {@value #CONTEXT}, separate output matrix, all F32. Vocabulary: the 256 byte-level BPE byte tokens (GPT-2's
 * byte-to-character mapping, in byte order), then {@code <|begin_of_text|>} (BOS, 256) and {@code <|end_of_text|>}
 * (EOS, 257); no merges.
 *
 * <p>So that the gibberish is at least printable (random bytes would include terminal control sequences and invalid
 * UTF-8), the rows of {@code output.weight} for printable ASCII and newline are drawn with a much larger scale
 * ({@value #LIKELY_SCALE}) than the other rows ({@value #UNLIKELY_SCALE}), so their logits dominate; the EOS row has a
 * larger one still ({@value #EOS_SCALE}), so that most completions end by themselves within a few hundred tokens.
 */
public final class DefaultModel {
    /** Bumped whenever the generated file would change; part of the file name, so old caches are never misread. */
    public static final int FORMAT_VERSION = 2;
    public static final String FILE_NAME = "forkpoint-default-v" + FORMAT_VERSION + ".gguf";
    public static final long SEED = 20261202L;
    public static final String NAME = "forkpoint-default (random weights)";
    public static final String NOTE = "note: no --model given; using the built-in demo model (random weights, output is gibberish)";

    static final int DIM = 64;
    static final int LAYERS = 2;
    static final int HEADS = 4;
    static final int KV_HEADS = 2;
    static final int FFN = 160;
    static final int CONTEXT = 2048;
    static final int HEAD_DIM = DIM / HEADS;
    static final int KV_DIM = KV_HEADS * HEAD_DIM;
    static final int BOS = 256;
    static final int EOS = 257;
    static final int VOCAB = 258;
    static final double LIKELY_SCALE = 0.3;
    static final double UNLIKELY_SCALE = 0.01;
    static final double EOS_SCALE = 1.0;

    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private DefaultModel() {}

    /** Where the built-in model is cached: Forkpoint's cache directory ({@link dev.forkpoint.CacheDirectory}). */
    public static Path cacheDirectory(Map<String, String> env) {
        return dev.forkpoint.CacheDirectory.of(env);
    }

    /**
     * The cached model file in {@code directory}, generated first when it is missing or unreadable. The file appears
     * under its name only complete (written to a temporary sibling, forced to disk, then renamed atomically); the
     * temporaries of writers that died mid-write (a kill -9) are deleted here.
     */
    public static Path ensure(Path directory) {
        Path file = directory.resolve(FILE_NAME);
        deleteStaleTemporaries(directory);
        if (isIntact(file)) return file;
        try {
            Files.createDirectories(directory);
            Path partial = directory.resolve(FILE_NAME + "." + ProcessHandle.current().pid() + "." + System.nanoTime() + ".partial");
            try {
                write(partial);
                try (FileChannel ch = FileChannel.open(partial, StandardOpenOption.WRITE)) {
                    ch.force(true);   // the bytes are on disk before the name is: a crash of the machine cannot leave a hollow file
                }
                Files.move(partial, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } finally {
                Files.deleteIfExists(partial);
            }
        } catch (IOException e) {
            throw new InvalidInputException("cannot write the built-in demo model to " + directory + " (" + e
                    + "); set XDG_CACHE_HOME to a writable directory or give --model", e);
        }
        return file;
    }

    /** {@code FILE_NAME.<pid>.<nanos>.partial}, or with GgufWriter's {@code .tmp} after it. */
    private static final Pattern TEMPORARY = Pattern.compile(Pattern.quote(FILE_NAME) + "\\.(\\d+)\\.\\d+\\.partial(\\.tmp)?");

    /** Deletes the temporaries in {@code directory} whose writing process is gone (a live writer's are left alone). */
    static void deleteStaleTemporaries(Path directory) {
        if (!Files.isDirectory(directory)) return;
        try (Stream<Path> files = Files.list(directory)) {
            for (Path p : files.toList()) {
                Matcher m = TEMPORARY.matcher(p.getFileName().toString());
                if (!m.matches()) continue;
                long pid = Long.parseLong(m.group(1));
                if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) continue;
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // another process removed it, or it cannot be removed: it is never read either way
                }
            }
        } catch (IOException | NumberFormatException e) {
            // best effort: a temporary left behind is wasted space, never a wrong model
        }
    }

    private static boolean isIntact(Path file) {
        if (!Files.isRegularFile(file)) return false;
        try (GgufFile gguf = GgufFile.open(file)) {
            return NAME.equals(gguf.getString("general.name", "")) && gguf.tensors().size() == 3 + 9 * LAYERS;
        } catch (IOException | ModelFormatException e) {
            return false;
        }
    }

    /** Generates the model into {@code target} (atomically, via a temporary sibling). */
    public static void write(Path target) throws IOException {
        var rng = new SplittableRandom(SEED);
        try (Arena arena = Arena.ofConfined()) {
            var w = new GgufWriter();
            w.put("general.architecture", MetadataValue.of("llama"));
            w.put("general.name", MetadataValue.of(NAME));
            w.put("general.file_type", MetadataValue.ofU32(0));
            w.put("general.alignment", MetadataValue.ofU32(32));
            w.put("llama.context_length", MetadataValue.ofU32(CONTEXT));
            w.put("llama.embedding_length", MetadataValue.ofU32(DIM));
            w.put("llama.block_count", MetadataValue.ofU32(LAYERS));
            w.put("llama.feed_forward_length", MetadataValue.ofU32(FFN));
            w.put("llama.attention.head_count", MetadataValue.ofU32(HEADS));
            w.put("llama.attention.head_count_kv", MetadataValue.ofU32(KV_HEADS));
            w.put("llama.rope.dimension_count", MetadataValue.ofU32(HEAD_DIM));
            w.put("llama.rope.freq_base", MetadataValue.ofF32(10000.0));
            w.put("llama.attention.layer_norm_rms_epsilon", MetadataValue.ofF32(1e-5));
            w.put("llama.vocab_size", MetadataValue.ofU32(VOCAB));
            w.put("tokenizer.ggml.model", MetadataValue.of("gpt2"));
            w.put("tokenizer.ggml.pre", MetadataValue.of("default"));
            w.put("tokenizer.ggml.tokens", MetadataValue.ofStrings(tokens()));
            w.put("tokenizer.ggml.token_type", MetadataValue.ofI32s(tokenTypes()));
            w.put("tokenizer.ggml.merges", new MetadataValue.Array(MetadataType.STRING, List.of()));
            w.put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(BOS));
            w.put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(EOS));
            w.put("tokenizer.ggml.add_bos_token", MetadataValue.ofBool(true));
            w.put("tokenizer.ggml.add_eos_token", MetadataValue.ofBool(false));

            w.add(matrix(arena, rng, "token_embd.weight", DIM, VOCAB));
            for (int l = 0; l < LAYERS; l++) {
                String p = "blk." + l + ".";
                w.add(norm(arena, rng, p + "attn_norm.weight"));
                w.add(matrix(arena, rng, p + "attn_q.weight", DIM, DIM));
                w.add(matrix(arena, rng, p + "attn_k.weight", DIM, KV_DIM));
                w.add(matrix(arena, rng, p + "attn_v.weight", DIM, KV_DIM));
                w.add(matrix(arena, rng, p + "attn_output.weight", DIM, DIM));
                w.add(norm(arena, rng, p + "ffn_norm.weight"));
                w.add(matrix(arena, rng, p + "ffn_gate.weight", DIM, FFN));
                w.add(matrix(arena, rng, p + "ffn_up.weight", DIM, FFN));
                w.add(matrix(arena, rng, p + "ffn_down.weight", FFN, DIM));
            }
            w.add(norm(arena, rng, "output_norm.weight"));
            w.add(outputMatrix(arena, rng));
            w.write(target);
        }
    }

    /** GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other bytes for U+0100 + n. */
    static List<String> tokens() {
        List<String> out = new ArrayList<>(VOCAB);
        out.addAll(ByteUnicode.byteTokens());
        out.add("<|begin_of_text|>");
        out.add("<|end_of_text|>");
        return out;
    }

    private static int[] tokenTypes() {
        int[] types = new int[VOCAB];
        java.util.Arrays.fill(types, 0, 256, 1);   // normal
        types[BOS] = 3;                             // control
        types[EOS] = 3;
        return types;
    }

    /** A [rowLength, rows] matrix with entries of standard deviation 0.8 / √rowLength (0.06–0.1 here). */
    private static GgufWriter.TensorData matrix(Arena arena, SplittableRandom rng, String name, int rowLength, int rows) {
        double scale = 0.8 / Math.sqrt(rowLength);
        MemorySegment data = arena.allocate((long) rowLength * rows * Float.BYTES);
        for (long i = 0; i < (long) rowLength * rows; i++) data.setAtIndex(F32_LE, i, (float) (scale * normal(rng)));
        return new GgufWriter.TensorData(name, GgmlType.F32, new long[] {rowLength, rows}, data);
    }

    /** The output projection: rows of likely tokens (see the class comment) with a large scale, the rest small. */
    private static GgufWriter.TensorData outputMatrix(Arena arena, SplittableRandom rng) {
        MemorySegment data = arena.allocate((long) DIM * VOCAB * Float.BYTES);
        for (int token = 0; token < VOCAB; token++) {
            double scale = outputRowScale(token);
            for (int i = 0; i < DIM; i++) data.setAtIndex(F32_LE, (long) token * DIM + i, (float) (scale * normal(rng)));
        }
        return new GgufWriter.TensorData("output.weight", GgmlType.F32, new long[] {DIM, VOCAB}, data);
    }

    /** The standard deviation of token {@code token}'s row of {@code output.weight}. */
    static double outputRowScale(int token) {
        if (token == EOS) return EOS_SCALE;
        boolean printable = (token >= 0x20 && token <= 0x7E) || token == '\n';
        return printable ? LIKELY_SCALE : UNLIKELY_SCALE;
    }

    /** An RMS-norm weight vector near 1. */
    private static GgufWriter.TensorData norm(Arena arena, SplittableRandom rng, String name) {
        MemorySegment data = arena.allocate((long) DIM * Float.BYTES);
        for (int i = 0; i < DIM; i++) data.setAtIndex(F32_LE, i, (float) (1 + 0.05 * normal(rng)));
        return new GgufWriter.TensorData(name, GgmlType.F32, new long[] {DIM}, data);
    }

    /** Mean 0, variance 1: a scaled sum of four uniforms (Irwin–Hall), exact arithmetic only, so every JVM agrees. */
    private static double normal(SplittableRandom rng) {
        double sum = rng.nextDouble() + rng.nextDouble() + rng.nextDouble() + rng.nextDouble();
        return (sum - 2.0) * 1.7320508075688772;   // √3: the sum of four U(0,1) has variance 1/3
    }
}
