package dev.forkpoint.engine;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.format.gguf.MetadataType;
import dev.forkpoint.format.gguf.MetadataValue;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.fuzz.TinyLlama;
import dev.forkpoint.kvcache.CacheStats;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.tensor.GgmlType;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Models that the file readers accept but whose contents are fuzzed, loaded as the engine loads them and run for a
 * few tokens: a {@link TinyLlama} GGUF with fuzzed metadata values and types, tensor shapes, types and names; and a
 * Hugging Face folder (the same model converted) with a fuzzed {@code config.json}. Each must load and run, or be
 * refused with a typed error; a loaded model's logits cover its vocabulary and a refused request leaves the cache
 * as it was.
 */
class ModelLoadFuzzTest {
    static final long KV_BYTES = 1 << 20;
    static final List<String> KEYS = List.of("general.architecture", "general.alignment", "llama.context_length",
            "llama.embedding_length", "llama.block_count", "llama.feed_forward_length", "llama.attention.head_count",
            "llama.attention.head_count_kv", "llama.attention.key_length", "llama.rope.dimension_count",
            "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon", "llama.vocab_size",
            "qwen2.embedding_length", "qwen3.embedding_length", "tokenizer.ggml.model", "tokenizer.ggml.pre",
            "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.scores",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
            "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.eom_token_id",
            "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix",
            "tokenizer.chat_template");
    static final List<String> WORDS = List.of("llama", "qwen2", "qwen3", "gpt2", "default", "llama-bpe", "llama3",
            "qwen2", "smollm", "gpt-2", "tekken", "<|bos|>", "<|eos|>", "a", "Ġ", "▁", "<0x41>", "a b", "");
    static final List<String> TENSORS = List.of("token_embd.weight", "output.weight", "output_norm.weight",
            "rope_freqs.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight",
            "blk.0.attn_output.weight", "blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias",
            "blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight", "blk.0.ffn_gate.weight", "blk.1.attn_norm.weight");
    static final GgmlType[] TYPES = GgmlType.supportedTypes().toArray(GgmlType[]::new);

    static final Path DIR;
    static final Path HF_FOLDER;

    static {
        try {
            DIR = Files.createTempDirectory("forkpoint-fuzz-models-");
            DIR.toFile().deleteOnExit();
            HF_FOLDER = TinyLlama.hfFolderCopy();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One load and run of each kind before fuzzing, so that the first input is not charged for loading the classes. */
    @org.junit.jupiter.api.BeforeAll
    static void warmUp() throws Exception {
        run(TinyLlama.ggufFile(), "Hello");
        run(HF_FOLDER, "Hello");
    }

    @FuzzTest(maxDuration = "30s")
    void ggufModel(FuzzedDataProvider data) throws Exception {
        var model = new TinyLlama();
        int edits = data.consumeInt(0, 8);
        for (int i = 0; i < edits && data.remainingBytes() > 0; i++) edit(model, data);
        if (model.dataBytes(1 << 20) < 0) return;   // not a file the writer can produce
        Path file = DIR.resolve("fuzzed.gguf");
        try {
            model.write(file, data.consumeLong());
        } catch (IllegalArgumentException | ArithmeticException writerRefused) {
            return;   // the writer's own checks (a value that does not fit its type, a repeated name)
        }
        run(file, data.consumeRemainingAsString());
    }

    @FuzzTest(maxDuration = "30s")
    void hfConfig(byte[] configJson) throws Exception {
        Files.write(HF_FOLDER.resolve("config.json"), configJson);
        run(HF_FOLDER, "Hello");
    }

    /** Loads {@code model}; when it loads, evaluates, generates, and checks a refused request left the cache alone. */
    static void run(Path model, String prompt) throws Exception {
        FuzzInvariant.typedErrorOrValid(() -> {
            try (LoadedModel m = LoadedModel.load(model, 1, LoadProgress.NONE, EngineOptions.defaults().withKvCacheBytes(KV_BYTES))) {
                int vocab = m.config().vocabSize();
                int[] ids = m.tokenizer().encode(prompt.length() > 64 ? prompt.substring(0, 64) : prompt, true, true);
                for (int id : ids) check(id >= 0 && id < m.tokenizer().vocabSize(), "token id " + id + " outside the tokenizer's vocabulary");
                if (ids.length > 0) {
                    var logits = FuzzInvariant.typedErrorOrValid(() -> {
                        float[] l = m.logits(ids);
                        check(l.length >= vocab, "logits of " + l.length + " values for a vocabulary of " + vocab);
                    });
                }
                GenerationFuzzTest.generate(m, new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(3), 0, 8));
            }
        });
    }

    static void edit(TinyLlama m, FuzzedDataProvider data) {
        switch (data.consumeInt(0, 6)) {
            case 0 -> m.metadata.put(data.pickValue(KEYS), value(data, 0));
            case 1 -> m.metadata.remove(data.pickValue(KEYS));
            case 2 -> {
                if (m.tensors.isEmpty()) return;
                int i = data.consumeInt(0, m.tensors.size() - 1);
                long[] shape = new long[data.consumeInt(1, 3)];
                for (int d = 0; d < shape.length; d++) shape[d] = data.consumeInt(1, 300);
                var t = m.tensors.get(i);
                m.tensors.set(i, new TinyLlama.Tensor(t.name(), t.type(), shape));
            }
            case 3 -> {
                if (m.tensors.isEmpty()) return;
                int i = data.consumeInt(0, m.tensors.size() - 1);
                var t = m.tensors.get(i);
                m.tensors.set(i, new TinyLlama.Tensor(t.name(), data.pickValue(TYPES), t.shape()));
            }
            case 4 -> {
                if (!m.tensors.isEmpty()) m.tensors.remove(data.consumeInt(0, m.tensors.size() - 1));
            }
            case 5 -> {
                String name = data.pickValue(TENSORS);
                if (m.tensors.stream().noneMatch(t -> t.name().equals(name))) {
                    m.tensors.add(new TinyLlama.Tensor(name, GgmlType.F32, new long[]{data.consumeInt(1, 64)}));
                }
            }
            default -> {
                if (m.tensors.isEmpty()) return;
                int i = data.consumeInt(0, m.tensors.size() - 1);
                String name = data.pickValue(TENSORS);
                var t = m.tensors.get(i);
                if (m.tensors.stream().noneMatch(x -> x.name().equals(name))) m.tensors.set(i, new TinyLlama.Tensor(name, t.type(), t.shape()));
            }
        }
    }

    /** A metadata value of a fuzzed type; arrays hold scalars (or, nested once, arrays). */
    static MetadataValue value(FuzzedDataProvider data, int depth) {
        return switch (data.consumeInt(0, depth == 0 ? 9 : 7)) {
            case 0 -> new MetadataValue.Int(MetadataType.UINT32, data.consumeLong(0, 0xFFFF_FFFFL));
            case 1 -> new MetadataValue.Int(MetadataType.INT32, data.consumeInt());
            case 2 -> new MetadataValue.Int(MetadataType.UINT32, data.consumeInt(0, 300));
            case 3 -> new MetadataValue.Int(MetadataType.INT64, data.consumeLong());
            case 4 -> new MetadataValue.Float(MetadataType.FLOAT32, data.consumeFloat());
            case 5 -> new MetadataValue.Bool(data.consumeBoolean());
            case 6 -> new MetadataValue.Str(data.pickValue(WORDS));
            case 7 -> new MetadataValue.Str(data.consumeString(40));
            case 8 -> {
                var values = new ArrayList<MetadataValue>();
                int n = data.consumeInt(0, 300);
                MetadataValue first = value(data, 1);
                MetadataType type = first.type();
                values.add(first);
                for (int i = 1; i < n; i++) {
                    values.add(switch (first) {
                        case MetadataValue.Int x -> new MetadataValue.Int(x.type(), x.type() == MetadataType.INT64 ? data.consumeLong()
                                : x.type() == MetadataType.INT32 ? data.consumeInt() : data.consumeLong(0, 300));
                        case MetadataValue.Float x -> new MetadataValue.Float(x.type(), data.consumeFloat());
                        case MetadataValue.Bool x -> new MetadataValue.Bool(data.consumeBoolean());
                        case MetadataValue.Str x -> new MetadataValue.Str(i % 2 == 0 ? data.pickValue(WORDS) : data.consumeString(8));
                        case MetadataValue.Array x -> x;
                    });
                }
                yield new MetadataValue.Array(type, values);
            }
            default -> new MetadataValue.Array(MetadataType.STRING, List.of());
        };
    }
}
