package dev.forkpoint.engine;

import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataType;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A tiny Llama with random weights and a long trained context, written with {@link GgufWriter} for tests: dim 32,
 * 2 layers, 2 heads sharing 1 KV head of 16, FFN 64, all F32. Vocabulary: GPT-2's 256 byte tokens (in byte order,
 * no merges, pre-tokenizer "default"), then BOS 256 and EOS 257 (control), so one prompt character of ASCII is one
 * token. The output rows of printable ASCII get a larger scale than the others and EOS a small one, so greedy
 * replies are printable text that re-encodes to the same ids and runs to num_predict.
 */
public final class SyntheticLlama {
    static final int DIM = 32, LAYERS = 2, HEADS = 2, KV_HEADS = 1, HEAD_DIM = DIM / HEADS, FFN = 64;
    static final int BOS = 256, EOS = 257, VOCAB = 258;
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private SyntheticLlama() {}

    public static Path write(Path target, int context, long seed) throws IOException {
        var rng = new SplittableRandom(seed);
        try (Arena arena = Arena.ofConfined()) {
            var w = new GgufWriter();
            w.put("general.architecture", MetadataValue.of("llama"));
            w.put("general.name", MetadataValue.of("synthetic long-context llama"));
            w.put("general.alignment", MetadataValue.ofU32(32));
            w.put("llama.context_length", MetadataValue.ofU32(context));
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
            int[] types = new int[VOCAB];
            java.util.Arrays.fill(types, 0, 256, 1);
            types[BOS] = types[EOS] = 3;
            w.put("tokenizer.ggml.token_type", MetadataValue.ofI32s(types));
            w.put("tokenizer.ggml.merges", new MetadataValue.Array(MetadataType.STRING, List.of()));
            w.put("tokenizer.ggml.bos_token_id", MetadataValue.ofU32(BOS));
            w.put("tokenizer.ggml.eos_token_id", MetadataValue.ofU32(EOS));
            w.put("tokenizer.ggml.add_bos_token", MetadataValue.ofBool(true));
            w.put("tokenizer.ggml.add_eos_token", MetadataValue.ofBool(false));

            w.add(matrix(arena, rng, "token_embd.weight", DIM, VOCAB, 1.0));
            int kvDim = KV_HEADS * HEAD_DIM;
            for (int l = 0; l < LAYERS; l++) {
                String p = "blk." + l + ".";
                w.add(norm(arena, rng, p + "attn_norm.weight"));
                w.add(matrix(arena, rng, p + "attn_q.weight", DIM, DIM, 2.0));
                w.add(matrix(arena, rng, p + "attn_k.weight", DIM, kvDim, 2.0));
                w.add(matrix(arena, rng, p + "attn_v.weight", DIM, kvDim, 1.0));
                w.add(matrix(arena, rng, p + "attn_output.weight", DIM, DIM, 1.0));
                w.add(norm(arena, rng, p + "ffn_norm.weight"));
                w.add(matrix(arena, rng, p + "ffn_gate.weight", DIM, FFN, 1.0));
                w.add(matrix(arena, rng, p + "ffn_up.weight", DIM, FFN, 1.0));
                w.add(matrix(arena, rng, p + "ffn_down.weight", FFN, DIM, 1.0));
            }
            w.add(norm(arena, rng, "output_norm.weight"));
            MemorySegment out = arena.allocate((long) DIM * VOCAB * Float.BYTES);
            for (int token = 0; token < VOCAB; token++) {
                boolean printable = token >= 0x20 && token <= 0x7E;
                double scale = token == EOS ? 0.01 : printable ? 0.5 : 0.01;
                for (int i = 0; i < DIM; i++) out.setAtIndex(F32_LE, (long) token * DIM + i, (float) (scale * normal(rng)));
            }
            w.add(new GgufWriter.TensorData("output.weight", GgmlType.F32, new long[] {DIM, VOCAB}, out));
            w.write(target);
        }
        return target;
    }

    private static List<String> tokens() {
        List<String> out = new ArrayList<>(VOCAB);
        int shifted = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            out.add(Character.toString(printable ? b : 256 + shifted++));
        }
        out.add("<|begin_of_text|>");
        out.add("<|end_of_text|>");
        return out;
    }

    private static GgufWriter.TensorData matrix(Arena arena, SplittableRandom rng, String name, int rowLength, int rows, double gain) {
        double scale = gain * 0.8 / Math.sqrt(rowLength);
        MemorySegment data = arena.allocate((long) rowLength * rows * Float.BYTES);
        for (long i = 0; i < (long) rowLength * rows; i++) data.setAtIndex(F32_LE, i, (float) (scale * normal(rng)));
        return new GgufWriter.TensorData(name, GgmlType.F32, new long[] {rowLength, rows}, data);
    }

    private static GgufWriter.TensorData norm(Arena arena, SplittableRandom rng, String name) {
        MemorySegment data = arena.allocate((long) DIM * Float.BYTES);
        for (int i = 0; i < DIM; i++) data.setAtIndex(F32_LE, i, (float) (1 + 0.05 * normal(rng)));
        return new GgufWriter.TensorData(name, GgmlType.F32, new long[] {DIM}, data);
    }

    private static double normal(SplittableRandom rng) {
        return (rng.nextDouble() + rng.nextDouble() + rng.nextDouble() + rng.nextDouble() - 2.0) * 1.7320508075688772;
    }

    /** {@code n} printable ASCII characters (lower-case words and spaces) drawn from {@code seed}: n tokens. */
    public static String text(int n, long seed) {
        var rng = new SplittableRandom(seed);
        StringBuilder sb = new StringBuilder(n);
        while (sb.length() < n) sb.append(rng.nextInt(6) == 0 ? ' ' : (char) ('a' + rng.nextInt(26)));
        return sb.toString();
    }
}
