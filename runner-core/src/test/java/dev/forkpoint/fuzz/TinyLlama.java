package dev.forkpoint.fuzz;

import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataType;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The smallest Llama the loaders accept, as GGUF metadata and tensors that fuzz targets mutate before writing: dim 8,
 * 1 layer, 2 heads sharing 1 KV head of 4, FFN 16, all F32 with seeded random weights; vocabulary GPT-2's 256
 * byte tokens then BOS 256 and EOS 257 (control), no merges, pre-tokenizer "default", context 64. About 20 kB.
 */
public final class TinyLlama {
    public static final int DIM = 8, LAYERS = 1, HEADS = 2, KV_HEADS = 1, HEAD_DIM = DIM / HEADS, FFN = 16;
    public static final int BOS = 256, EOS = 257, VOCAB = 258, CONTEXT = 64;
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** A tensor as it will be written: its GGML-order shape and type; data is generated to fit when written. */
    public record Tensor(String name, GgmlType type, long[] shape) {}

    public final Map<String, MetadataValue> metadata = new LinkedHashMap<>();
    public final List<Tensor> tensors = new ArrayList<>();

    public TinyLlama() {
        metadata.put("general.architecture", MetadataValue.of("llama"));
        metadata.put("general.name", MetadataValue.of("tiny fuzz llama"));
        metadata.put("llama.context_length", MetadataValue.ofU32(CONTEXT));
        metadata.put("llama.embedding_length", MetadataValue.ofU32(DIM));
        metadata.put("llama.block_count", MetadataValue.ofU32(LAYERS));
        metadata.put("llama.feed_forward_length", MetadataValue.ofU32(FFN));
        metadata.put("llama.attention.head_count", MetadataValue.ofU32(HEADS));
        metadata.put("llama.attention.head_count_kv", MetadataValue.ofU32(KV_HEADS));
        metadata.put("llama.rope.dimension_count", MetadataValue.ofU32(HEAD_DIM));
        metadata.put("llama.rope.freq_base", MetadataValue.ofF32(10000.0));
        metadata.put("llama.attention.layer_norm_rms_epsilon", MetadataValue.ofF32(1e-5));
        metadata.put("tokenizer.ggml.model", MetadataValue.of("gpt2"));
        metadata.put("tokenizer.ggml.pre", MetadataValue.of("default"));
        metadata.put("tokenizer.ggml.tokens", MetadataValue.ofStrings(byteTokens()));
        int[] types = new int[VOCAB];
        Arrays.fill(types, 0, 256, 1);
        types[BOS] = types[EOS] = 3;
        metadata.put("tokenizer.ggml.token_type", MetadataValue.ofI32s(types));
        metadata.put("tokenizer.ggml.merges", new MetadataValue.Array(MetadataType.STRING, List.of()));
        metadata.put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(BOS));
        metadata.put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(EOS));
        metadata.put("tokenizer.ggml.add_bos_token", MetadataValue.ofBool(true));
        metadata.put("tokenizer.chat_template", MetadataValue.of(
                "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"));
        int kvDim = KV_HEADS * HEAD_DIM;
        tensors.add(new Tensor("token_embd.weight", GgmlType.F32, new long[]{DIM, VOCAB}));
        for (int l = 0; l < LAYERS; l++) {
            String p = "blk." + l + ".";
            tensors.add(new Tensor(p + "attn_norm.weight", GgmlType.F32, new long[]{DIM}));
            tensors.add(new Tensor(p + "attn_q.weight", GgmlType.F32, new long[]{DIM, DIM}));
            tensors.add(new Tensor(p + "attn_k.weight", GgmlType.F32, new long[]{DIM, kvDim}));
            tensors.add(new Tensor(p + "attn_v.weight", GgmlType.F32, new long[]{DIM, kvDim}));
            tensors.add(new Tensor(p + "attn_output.weight", GgmlType.F32, new long[]{DIM, DIM}));
            tensors.add(new Tensor(p + "ffn_norm.weight", GgmlType.F32, new long[]{DIM}));
            tensors.add(new Tensor(p + "ffn_gate.weight", GgmlType.F32, new long[]{DIM, FFN}));
            tensors.add(new Tensor(p + "ffn_up.weight", GgmlType.F32, new long[]{DIM, FFN}));
            tensors.add(new Tensor(p + "ffn_down.weight", GgmlType.F32, new long[]{FFN, DIM}));
        }
        tensors.add(new Tensor("output_norm.weight", GgmlType.F32, new long[]{DIM}));
        tensors.add(new Tensor("output.weight", GgmlType.F32, new long[]{DIM, VOCAB}));
    }

    private static Path gguf, hf;

    /** The unedited model written once per JVM (seed 1) into a temporary folder. */
    public static synchronized Path ggufFile() throws IOException {
        if (gguf == null) {
            Path dir = Files.createTempDirectory("forkpoint-fuzz-tiny-");
            dir.toFile().deleteOnExit();
            gguf = dir.resolve("tiny.gguf");
            new TinyLlama().write(gguf, 1);
        }
        return gguf;
    }

    /** A fresh copy of the model as a Hugging Face folder (config.json, model.safetensors, tokenizer files). */
    public static synchronized Path hfFolderCopy() throws IOException {
        if (hf == null) {
            hf = ggufFile().resolveSibling("hf");
            ModelConverter.toMlx(ggufFile(), hf, MlxOptions.defaults().unquantised(), (a, b) -> {});
        }
        Path copy = Files.createTempDirectory("forkpoint-fuzz-hf-");
        copy.toFile().deleteOnExit();
        try (var files = Files.list(hf)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Path to = copy.resolve(f.getFileName().toString());
                Files.copy(f, to);
                to.toFile().deleteOnExit();
            }
        }
        return copy;
    }

    /** GPT-2's byte-level characters for bytes 0..255 (in byte order), then the two control tokens. */
    static List<String> byteTokens() {
        List<String> out = new ArrayList<>();
        int n = 0;
        int[] map = new int[256];
        for (int b = 0; b < 256; b++) {
            boolean direct = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            map[b] = direct ? b : 256 + n++;
        }
        for (int b = 0; b < 256; b++) out.add(new String(Character.toChars(map[b])));
        out.add("<|bos|>");
        out.add("<|eos|>");
        return out;
    }

    /** Bytes of all tensors' data, or -1 when a shape does not describe whole blocks or would be over {@code limit}. */
    public long dataBytes(long limit) {
        long total = 0;
        for (Tensor t : tensors) {
            long elements = 1;
            for (long d : t.shape) {
                if (d <= 0 || d > limit) return -1;
                elements *= d;
                if (elements > limit) return -1;
            }
            if (t.shape.length == 0 || elements % t.type.blockSize() != 0 || t.shape[0] % t.type.blockSize() != 0) return -1;
            total += t.type.bytesFor(elements);
            if (total > limit) return -1;
        }
        return total;
    }

    /**
     * Writes the file with seeded random data (F32 ≈ N(0, 0.3); other types random bytes, whose scales may be
     * anything, NaN and infinity included: a model file may hold them).
     */
    public void write(Path file, long seed) throws IOException {
        var rng = new SplittableRandom(seed);
        var w = new GgufWriter();
        w.putAll(metadata);
        for (Tensor t : tensors) {
            long elements = 1;
            for (long d : t.shape) elements *= d;
            MemorySegment data = MemorySegment.ofArray(new byte[(int) t.type.bytesFor(elements)]);
            if (t.type == GgmlType.F32) {
                for (long i = 0; i < elements; i++) data.set(F32_LE, i * 4, (float) (rng.nextGaussian() * 0.3));
            } else {
                for (long i = 0; i < data.byteSize(); i++) data.set(ValueLayout.JAVA_BYTE, i, (byte) rng.nextInt());
            }
            w.add(new GgufWriter.TensorData(t.name, t.type, t.shape, data));
        }
        w.write(file);
    }
}
