package dev.forkpoint.tokenizer;

import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.MetadataValue;

import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * The model-independent part of a GGUF vocabulary: token texts, types, scores, special ids and flags.
 * Ids that are absent are -1.
 */
final class Vocabulary {
    static final String PREFIX = "tokenizer.ggml.";

    /** Token texts llama.cpp treats as ending generation wherever they appear as special tokens. */
    static final Set<String> END_OF_GENERATION_TEXTS = Set.of(
            "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>",
            "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>");

    final String model;
    final String[] texts;
    final TokenType[] types;
    final float[] scores;
    final Map<String, Integer> ids;
    final int bos, eos, eot, eom, unknown, padding;
    final boolean addBos, addEos, addSpacePrefix;
    /** Control, user-defined and unknown tokens with non-empty text, longest text first. */
    final int[] specialByLength;
    private final BitSet endOfGeneration = new BitSet();

    /**
     * Reads the vocabulary of {@code file}. {@code defaults} supplies the per-model defaults for what the file
     * may leave out.
     */
    Vocabulary(GgufFile file, String model, Defaults defaults) {
        this.model = model;
        this.texts = file.getStringArray(PREFIX + "tokens");
        int n = texts.length;
        if (n == 0) throw new ModelFormatException(file.path(), "metadata " + PREFIX + "tokens", "is empty");

        this.types = new TokenType[n];
        if (file.has(PREFIX + "token_type")) {
            int[] codes = file.getIntArray(PREFIX + "token_type");
            requireLength(file, "token_type", codes.length, n);
            for (int i = 0; i < n; i++) types[i] = TokenType.of(codes[i]);
        } else {
            Arrays.fill(types, TokenType.NORMAL);
        }
        if (file.has(PREFIX + "scores")) {
            this.scores = file.getFloatArray(PREFIX + "scores");
            requireLength(file, "scores", scores.length, n);
        } else {
            this.scores = new float[n];
        }
        this.ids = new HashMap<>(n * 2);
        for (int i = 0; i < n; i++) ids.put(texts[i], i);

        this.bos = specialId(file, "bos_token_id", defaults.bos);
        this.eos = specialId(file, "eos_token_id", defaults.eos);
        this.unknown = specialId(file, "unknown_token_id", defaults.unknown);
        this.padding = specialId(file, "padding_token_id", -1);
        this.eom = specialId(file, "eom_token_id", -1);
        int eotId = specialId(file, "eot_token_id", -1);
        if (eotId < 0) {
            for (String name : new String[]{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>"}) {
                Integer id = ids.get(name);
                if (id != null && isSpecialLike(id)) {
                    eotId = id;
                    break;
                }
            }
        }
        this.eot = eotId;
        this.addBos = file.getBool(PREFIX + "add_bos_token", defaults.addBos) && bos >= 0;
        this.addEos = file.getBool(PREFIX + "add_eos_token", false) && eos >= 0;
        this.addSpacePrefix = file.getBool(PREFIX + "add_space_prefix", defaults.addSpacePrefix);

        for (int id : new int[]{eos, eot, eom}) if (id >= 0) endOfGeneration.set(id);
        for (String name : END_OF_GENERATION_TEXTS) {
            Integer id = ids.get(name);
            if (id != null && isSpecialLike(id)) endOfGeneration.set(id);
        }
        this.specialByLength = IntStream.range(0, n)
                .filter(i -> types[i].isSpecial() && !texts[i].isEmpty())
                .boxed()
                .sorted(Comparator.<Integer>comparingInt(i -> texts[i].length()).reversed().thenComparingInt(i -> i))
                .mapToInt(Integer::intValue)
                .toArray();
    }

    /** What a model assumes when its file is silent. */
    record Defaults(int bos, int eos, int unknown, boolean addBos, boolean addSpacePrefix) {}

    int size() { return texts.length; }

    boolean isEndOfGeneration(int id) { return id >= 0 && endOfGeneration.get(id); }

    /** Id of {@code text} or -1. */
    int id(String text) {
        Integer id = ids.get(text);
        return id == null ? -1 : id;
    }

    private boolean isSpecialLike(int id) {
        return types[id] != TokenType.NORMAL && types[id] != TokenType.BYTE;
    }

    private int specialId(GgufFile file, String key, int fallback) {
        long v = fallback;
        if (file.has(PREFIX + key)) {
            MetadataValue value = file.find(PREFIX + key).orElseThrow();
            if (!(value instanceof MetadataValue.Int i)) {
                throw new ModelFormatException(file.path(), "metadata " + PREFIX + key, "expected an integer, found " + value.describe());
            }
            v = i.value();
            if (v == -1 || v == 0xFFFF_FFFFL) return -1;   // "none", as int32 or uint32
            if (v < 0 || v >= texts.length) {
                throw new ModelFormatException(file.path(), "metadata " + PREFIX + key, "token id " + v
                        + " is outside the vocabulary of " + texts.length + " tokens");
            }
        }
        return v >= 0 && v < texts.length ? (int) v : -1;
    }

    private static void requireLength(GgufFile file, String key, int actual, int expected) {
        if (actual != expected) {
            throw new ModelFormatException(file.path(), "metadata " + PREFIX + key,
                    "has " + actual + " entries but " + PREFIX + "tokens has " + expected);
        }
    }
}
