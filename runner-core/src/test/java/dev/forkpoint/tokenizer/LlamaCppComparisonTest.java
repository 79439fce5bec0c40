package dev.forkpoint.tokenizer;

import de.kherud.llama.LlamaModel;
import de.kherud.llama.ModelParameters;
import dev.forkpoint.TestData;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Random texts tokenized by llama.cpp itself (through java-llama.cpp, which encodes with add_special=false,
 * parse_special=true) and by this package must give the same ids. Vocabularies without a model are wrapped in a
 * tiny zero-weight Llama so llama.cpp will load them.
 */
class LlamaCppComparisonTest {
    private static final int TEXTS = 250;

    @TempDir
    Path dir;

    /** Pieces random texts are made of: scripts, spacing, digits, contractions, emoji, special-token texts. */
    private static final String[] PIECES = {
            "a", "b", "Hello", "world", "The", "quick", "don't", "I'll", "we're", "'S", "'ve", "'m", "'d", "l'homme",
            " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\u00A0", "\u3000", "\u2009",
            "0", "7", "42", "1234", "3333333", "3.14", "½", "²", "٣",
            ".", ",", "!", "?", "...", "(", ")", "[", "]", "{", "}", "<", ">", "/", "\\", "-", "--", "_", "=", "+", "*",
            "&", "#", "@", "$", "%", "^", "|", "~", "`", "\"", "'",
            "é", "Führer", "naïve", "Cửa", "Việt", "нещо", "Български", "ελληνικά", "עברית", "العربية", "हिन्दी",
            "我想", "在", "工作", "日本語", "カタカナ", "한국어", "ก", "កាន់តែ", "ពិសេស",
            "🦙", "🚀", "😶‍🌫️", "✅", "👍🏽", "❤️", "\u200D", "\uFE0F", "\u0301",
            "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>",
            "▁", "Ġ", "<0x41>",
    };

    private static List<String> randomTexts(long seed) {
        Random random = new Random(seed);
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < TEXTS; i++) {
            StringBuilder sb = new StringBuilder();
            int n = 1 + random.nextInt(i < TEXTS / 2 ? 6 : 30);
            for (int k = 0; k < n; k++) sb.append(PIECES[random.nextInt(PIECES.length)]);
            texts.add(sb.toString());
        }
        return texts;
    }

    private static LlamaModel loadLlamaCpp(Path model) {
        try {
            LlamaModel.setLogger(null, (level, message) -> {});
            return new LlamaModel(new ModelParameters().setModel(model.toString()).setCtxSize(64).setThreads(1).skipWarmup());
        } catch (Throwable e) {
            Assumptions.abort("llama.cpp (java-llama.cpp) is not usable here: " + e);
            return null;
        }
    }

    private static void compare(Path model, long seed) throws IOException {
        Tokenizer ours;
        try (GgufFile file = GgufFile.open(model)) {
            ours = Tokenizer.fromGguf(file);
        }
        try (LlamaModel reference = loadLlamaCpp(model)) {
            for (String text : randomTexts(seed)) {
                int[] expected = reference.encode(text);
                int[] actual = ours.encode(text, false, true);
                assertArrayEquals(expected, actual, () -> ours.model() + " \"" + escape(text) + "\": llama.cpp "
                        + Arrays.toString(expected) + ", ours " + Arrays.toString(actual));
                // llama.cpp's decode concatenates the pieces; control pieces it shows as text, so compare without them.
                if (Arrays.stream(actual).allMatch(id -> ours.tokenBytes(id).length > 0)) {
                    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                    for (int id : actual) bytes.writeBytes(ours.tokenBytes(id));
                    assertEquals(reference.decode(actual), bytes.toString(StandardCharsets.UTF_8), () -> "decode of \"" + escape(text) + '"');
                }
            }
        }
    }

    private static String escape(String s) {
        return s.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
    }

    /** A one-layer Llama with zero weights around {@code vocabulary}'s tokenizer metadata. */
    private Path wrap(Path vocabulary, String name) throws IOException {
        GgufWriter w = new GgufWriter();
        int vocab;
        try (GgufFile file = GgufFile.open(vocabulary)) {
            file.metadata().forEach((k, v) -> {
                if (k.startsWith("tokenizer.")) w.put(k, v);
            });
            vocab = file.getStringArray("tokenizer.ggml.tokens").length;
        }
        return writeModel(w, vocab, name);
    }

    private Path writeModel(GgufWriter w, int vocab, String name) throws IOException {
        int embd = 8, ffn = 16;
        w.put("general.architecture", MetadataValue.of("llama"))
                .put("llama.context_length", MetadataValue.ofU32(64))
                .put("llama.embedding_length", MetadataValue.ofU32(embd))
                .put("llama.block_count", MetadataValue.ofU32(1))
                .put("llama.feed_forward_length", MetadataValue.ofU32(ffn))
                .put("llama.rope.dimension_count", MetadataValue.ofU32(4))
                .put("llama.attention.head_count", MetadataValue.ofU32(2))
                .put("llama.attention.head_count_kv", MetadataValue.ofU32(2))
                .put("llama.attention.layer_norm_rms_epsilon", MetadataValue.ofF32(1e-5));
        Path out = dir.resolve(name + "-model.gguf");
        try (Arena arena = Arena.ofConfined()) {
            tensor(w, arena, "token_embd.weight", embd, vocab);
            for (String t : new String[]{"attn_q", "attn_k", "attn_v", "attn_output"}) tensor(w, arena, "blk.0." + t + ".weight", embd, embd);
            tensor(w, arena, "blk.0.ffn_gate.weight", embd, ffn);
            tensor(w, arena, "blk.0.ffn_up.weight", embd, ffn);
            tensor(w, arena, "blk.0.ffn_down.weight", ffn, embd);
            tensor(w, arena, "blk.0.attn_norm.weight", embd);
            tensor(w, arena, "blk.0.ffn_norm.weight", embd);
            tensor(w, arena, "output_norm.weight", embd);
            tensor(w, arena, "output.weight", embd, vocab);
            w.write(out);
        }
        return out;
    }

    private static void tensor(GgufWriter w, Arena arena, String name, long... shape) {
        long n = Arrays.stream(shape).reduce(1, Math::multiplyExact);
        w.add(new GgufWriter.TensorData(name, GgmlType.F32, shape, arena.allocate(n * 4)));
    }

    @Test
    void llama2Spm() throws IOException {
        compare(TestData.shared("models/llama-2-tiny-random.gguf"), 1);
    }

    @Test
    void stories260KSpmWithHeavyByteFallback() throws IOException {
        compare(TestData.shared("models/stories260K.gguf"), 2);
    }

    @Test
    void gpt2() throws IOException {
        compare(wrap(TestData.shared("tokenizers/llamacpp/ggml-vocab-gpt-2.gguf"), "gpt2"), 3);
    }

    @Test
    void qwen2() throws IOException {
        compare(wrap(VocabFixtures.qwen2File(), "qwen2"), 4);
    }

    @Test
    void llama3() throws IOException {
        compare(wrap(VocabFixtures.llama3File(), "llama3"), 5);
    }

    @Test
    void byteLevelDefault() throws IOException {
        Path vocab = dir.resolve("default-vocab.gguf");
        VocabFixtures.byteLevelDefault().write(vocab);
        compare(wrap(vocab, "default"), 6);
    }
}
