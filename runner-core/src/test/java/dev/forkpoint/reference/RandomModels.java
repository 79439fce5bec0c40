package dev.forkpoint.reference;

import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * Seeded random GGUF models of every architecture Forkpoint runs, small enough for unit tests: dim 256, 2 layers,
 * 4 heads, 2 KV heads, FFN 512, a 300-token byte-level GPT-2 vocabulary (the 256 byte symbols of GPT-2's
 * bytes_to_unicode, BOS, EOS and 42 reserved control tokens, no merges). Every 2-D weight is stored in the requested
 * type; norms, biases and RoPE factors stay F32, as llama.cpp's converters store them. Dimensions are multiples of
 * 256 so that the K-quant types (256-element super-blocks) apply to every matrix.
 */
final class RandomModels {
    private RandomModels() {}

    static final int DIM = 256;
    static final int LAYERS = 2;
    static final int HEADS = 4;
    static final int KV_HEADS = 2;
    static final int FFN = 512;
    static final int BYTE_TOKENS = 256;
    static final int BOS = 256;
    static final int EOS = 257;
    static final int VOCAB = 300;
    static final int CONTEXT = 512;
    /** Qwen3's head dimension here, deliberately ≠ DIM / HEADS. */
    static final int QWEN3_HEAD_DIM = 128;

    /** The architecture variants covered. */
    enum Variant {
        /** Llama with separate output matrix, normal RoPE. */
        LLAMA("llama"),
        /** Llama with a {@code rope_freqs.weight} tensor of per-frequency divisors (Llama 3 RoPE scaling). */
        LLAMA_ROPE_FREQS("llama"),
        /** Llama without {@code output.weight}: logits use the token embeddings (tied). */
        LLAMA_TIED("llama"),
        /** Qwen2: NeoX RoPE, q/k/v biases (σ 0.5), rope base 1e6. */
        QWEN2("qwen2"),
        /** Qwen3: NeoX RoPE, per-head q/k RMSNorm, key_length 128 ≠ dim/heads = 64. */
        QWEN3("qwen3");

        final String architecture;

        Variant(String architecture) { this.architecture = architecture; }

        int headDim() { return this == QWEN3 ? QWEN3_HEAD_DIM : DIM / HEADS; }
    }

    /** The tensor types every variant is written in. */
    static final List<GgmlType> TYPES = List.of(GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0,
            GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K);

    /** Writes {@code variant} with 2-D weights in {@code type} to {@code dir}; the same seed gives the same file. */
    static Path write(Path dir, Variant variant, GgmlType type, long seed) throws IOException {
        Path file = dir.resolve(variant.name().toLowerCase() + "-" + type.name().toLowerCase() + "-" + seed + ".gguf");
        write(file, variant, type, seed, name -> false);
        return file;
    }

    /**
     * As {@link #write(Path, Variant, GgmlType, long)} into {@code file}, but leaving out the tensors {@code omit}
     * names, every other tensor identical — to show what a missing feature (RoPE factors, biases) does to logits.
     */
    static void write(Path file, Variant variant, GgmlType type, long seed, Predicate<String> omit) throws IOException {
        var random = new GaussianReader(TAPES.computeIfAbsent(seed * 1_000_003L + variant.ordinal(), GaussianTape::new));
        String a = variant.architecture;
        int hd = variant.headDim();
        var w = new GgufWriter()
                .put("general.architecture", MetadataValue.of(a))
                .put("general.name", MetadataValue.of("random-" + variant.name().toLowerCase() + "-" + type.name().toLowerCase()))
                .put("general.alignment", MetadataValue.ofU32(32))
                .put(a + ".vocab_size", MetadataValue.ofU32(VOCAB))
                .put(a + ".context_length", MetadataValue.ofU32(CONTEXT))
                .put(a + ".embedding_length", MetadataValue.ofU32(DIM))
                .put(a + ".block_count", MetadataValue.ofU32(LAYERS))
                .put(a + ".feed_forward_length", MetadataValue.ofU32(FFN))
                .put(a + ".attention.head_count", MetadataValue.ofU32(HEADS))
                .put(a + ".attention.head_count_kv", MetadataValue.ofU32(KV_HEADS))
                .put(a + ".attention.layer_norm_rms_epsilon", MetadataValue.ofF32(a.equals("llama") ? 1e-5 : 1e-6))
                .put(a + ".rope.freq_base", MetadataValue.ofF32(a.equals("llama") ? 10000.0 : 1_000_000.0))
                .put(a + ".rope.dimension_count", MetadataValue.ofU32(hd));
        if (variant == Variant.QWEN3) {
            w.put(a + ".attention.key_length", MetadataValue.ofU32(hd))
             .put(a + ".attention.value_length", MetadataValue.ofU32(hd));
        }
        putTokenizer(w, a.equals("llama"));

        try (Arena arena = Arena.ofConfined()) {
            var t = new Tensors(w, arena, random, type, omit);
            if (variant == Variant.LLAMA_ROPE_FREQS) {
                float[] factors = new float[hd / 2];
                // Divisors 1..4 cycling, so that high- and low-frequency pairs are both affected at small positions.
                for (int i = 0; i < factors.length; i++) factors[i] = 1 + (i % 4);
                t.f32("rope_freqs.weight", factors);
            }
            // Tied logits are embeddings · normed state: a smaller embedding scale keeps them at rms ≈ 4, not ≈ 16.
            t.matrix("token_embd.weight", DIM, VOCAB, variant == Variant.LLAMA_TIED ? 0.25 : 1.0);
            for (int l = 0; l < LAYERS; l++) {
                String p = "blk." + l + ".";
                t.norm(p + "attn_norm.weight", DIM);
                t.matrix(p + "attn_q.weight", DIM, HEADS * hd, 1 / Math.sqrt(DIM));
                t.matrix(p + "attn_k.weight", DIM, KV_HEADS * hd, 1 / Math.sqrt(DIM));
                t.matrix(p + "attn_v.weight", DIM, KV_HEADS * hd, 1 / Math.sqrt(DIM));
                if (variant == Variant.QWEN2) {
                    t.gaussian(p + "attn_q.bias", HEADS * hd, 0.5);
                    t.gaussian(p + "attn_k.bias", KV_HEADS * hd, 0.5);
                    t.gaussian(p + "attn_v.bias", KV_HEADS * hd, 0.5);
                }
                if (variant == Variant.QWEN3) {
                    t.norm(p + "attn_q_norm.weight", hd);
                    t.norm(p + "attn_k_norm.weight", hd);
                }
                t.matrix(p + "attn_output.weight", HEADS * hd, DIM, 1 / Math.sqrt(HEADS * hd));
                t.norm(p + "ffn_norm.weight", DIM);
                t.matrix(p + "ffn_gate.weight", DIM, FFN, 1 / Math.sqrt(DIM));
                t.matrix(p + "ffn_up.weight", DIM, FFN, 1 / Math.sqrt(DIM));
                t.matrix(p + "ffn_down.weight", FFN, DIM, 1 / Math.sqrt(FFN));
            }
            t.norm("output_norm.weight", DIM);
            if (variant != Variant.LLAMA_TIED) t.matrix("output.weight", DIM, VOCAB, 1 / Math.sqrt(DIM));
            w.write(file);
        }
    }

    /** GPT-2's reversible byte → printable-character map (bytes_to_unicode): printable Latin-1 maps to itself. */
    static String byteSymbol(int b) {
        if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return String.valueOf((char) b);
        int shifted = 0;
        for (int c = 0; c < b; c++) {
            if (!((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))) shifted++;
        }
        return String.valueOf((char) (256 + shifted));
    }

    private static void putTokenizer(GgufWriter w, boolean addBos) {
        List<String> tokens = new ArrayList<>(VOCAB);
        int[] types = new int[VOCAB];
        for (int b = 0; b < BYTE_TOKENS; b++) {
            tokens.add(byteSymbol(b));
            types[b] = 1; // normal
        }
        tokens.add("<|begin_of_text|>");
        tokens.add("<|end_of_text|>");
        while (tokens.size() < VOCAB) tokens.add("<|reserved_" + (tokens.size() - EOS - 1) + "|>");
        for (int i = BOS; i < VOCAB; i++) types[i] = 3; // control
        w.put("tokenizer.ggml.model", MetadataValue.of("gpt2"))
         .put("tokenizer.ggml.pre", MetadataValue.of("default"))
         .put("tokenizer.ggml.tokens", MetadataValue.ofStrings(tokens))
         .put("tokenizer.ggml.token_type", MetadataValue.ofI32s(types))
         .put("tokenizer.ggml.merges", MetadataValue.ofStrings(List.of()))
         .put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(BOS))
         .put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(EOS))
         .put("tokenizer.ggml.add_bos_token", MetadataValue.ofBool(addBos));
    }

    /** The Gaussian draws of each seed, kept so that writing one variant in seven types draws them only once. */
    private static final Map<Long, GaussianTape> TAPES = new ConcurrentHashMap<>();

    /** The sequence of standard normal draws of {@code new Random(seed)}, grown on demand. */
    private static final class GaussianTape {
        private final Random random;
        private float[] values = new float[0];

        GaussianTape(long seed) { random = new Random(seed); }

        synchronized float[] upTo(int n) {
            if (values.length < n) {
                float[] grown = java.util.Arrays.copyOf(values, Math.max(n, values.length + (1 << 16)));
                for (int i = values.length; i < grown.length; i++) grown[i] = (float) random.nextGaussian();
                values = grown;
            }
            return values;
        }
    }

    /** Reads a tape from its start. */
    private static final class GaussianReader {
        private final GaussianTape tape;
        private int position;

        GaussianReader(GaussianTape tape) { this.tape = tape; }

        /** dst[i] = mean + std · (next draw). */
        void fill(float[] dst, double mean, double std) {
            float[] draws = tape.upTo(position + dst.length);
            for (int i = 0; i < dst.length; i++) dst[i] = (float) (mean + std * draws[position + i]);
            position += dst.length;
        }
    }

    /** Adds tensors to a writer, encoding 2-D weights in the model's type. */
    private record Tensors(GgufWriter writer, Arena arena, GaussianReader random, GgmlType type, Predicate<String> omit) {
        private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

        void matrix(String name, int in, int out, double std) {
            float[] v = new float[in * out];
            random.fill(v, 0, std);
            add(name, type, new long[] {in, out}, v);
        }

        void norm(String name, int n) {
            float[] v = new float[n];
            random.fill(v, 1, 0.2);
            f32(name, v);
        }

        void gaussian(String name, int n, double std) {
            float[] v = new float[n];
            random.fill(v, 0, std);
            f32(name, v);
        }

        void f32(String name, float[] v) {
            add(name, GgmlType.F32, new long[] {v.length}, v);
        }

        private void add(String name, GgmlType t, long[] shape, float[] v) {
            if (omit.test(name)) return;
            MemorySegment seg = arena.allocate(t.bytesFor(v.length), 32);
            switch (t) {
                case F32 -> { for (int i = 0; i < v.length; i++) seg.setAtIndex(F32_LE, i, v[i]); }
                case F16 -> { for (int i = 0; i < v.length; i++) seg.setAtIndex(U16_LE, i, Float.floatToFloat16(v[i])); }
                case BF16 -> { for (int i = 0; i < v.length; i++) seg.setAtIndex(U16_LE, i, toBf16(v[i])); }
                default -> Quantization.quantize(t, v, 0, v.length, seg, 0);
            }
            writer.add(new GgufWriter.TensorData(name, t, shape, seg));
        }

        /** float → bfloat16, rounding to nearest even (the values here are finite). */
        private static short toBf16(float f) {
            int bits = Float.floatToRawIntBits(f);
            return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
        }
    }
}
