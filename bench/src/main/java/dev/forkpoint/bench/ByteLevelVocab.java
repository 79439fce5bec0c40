package dev.forkpoint.bench;

import dev.forkpoint.tokenizer.ByteUnicode;

import java.util.ArrayList;
import java.util.List;

/**
 * A GPT-2 byte-level vocabulary with no merges, shaped like Llama 3's: ids 0–255 are the byte-level characters of
 * bytes 0–255 (in byte order), then filler tokens up to the first special id, then control tokens (BOS, EOS,
 * reserved). Fillers are "Ġfp" followed by digits: the Llama 3 pre-tokenizer always splits letters from digits, so
 * no text can ever produce one, and with no merges every byte of a text is one token in any conforming tokenizer.
 */
record ByteLevelVocab(List<String> tokens, int[] tokenTypes) {
    /** {@code tokenizer.ggml.token_type} values. */
    static final int NORMAL = 1;
    static final int CONTROL = 3;

    static ByteLevelVocab forShape(ModelShape shape) {
        int n = shape.vocabSize();
        var tokens = new ArrayList<String>(n);
        int[] types = new int[n];
        tokens.addAll(ByteUnicode.byteTokens());
        for (int id = 256; id < shape.firstSpecialId(); id++) tokens.add("\u0120fp" + (id - 256));
        for (int i = 0; i < shape.specialTokens(); i++) {
            tokens.add(switch (i) {
                case 0 -> "<|begin_of_text|>";
                case 1 -> "<|end_of_text|>";
                default -> "<|reserved_special_token_" + (i - 2) + "|>";
            });
        }
        for (int id = 0; id < n; id++) types[id] = id >= shape.firstSpecialId() ? CONTROL : NORMAL;
        return new ByteLevelVocab(List.copyOf(tokens), types);
    }
}
