package dev.forkpoint.bench;

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
        for (int b = 0; b < 256; b++) tokens.add(byteChar(b));
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

    /**
     * GPT-2's byte-to-character map: printable Latin-1 bytes ('!'–'~', '¡'–'¬', '®'–'ÿ') stand for themselves, the
     * other 68 bytes map, in byte order, to U+0100 onwards.
     */
    static String byteChar(int b) {
        if (printable(b)) return String.valueOf((char) b);
        int rank = 0;
        for (int i = 0; i < b; i++) {
            if (!printable(i)) rank++;
        }
        return String.valueOf((char) (256 + rank));
    }

    private static boolean printable(int b) {
        return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    }
}
