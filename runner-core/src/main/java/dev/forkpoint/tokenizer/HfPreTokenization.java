package dev.forkpoint.tokenizer;

import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What a GGUF {@code tokenizer.ggml.pre} name means in a Hugging Face {@code tokenizer.json}, taken from the table the
 * loader runs ({@link PreTokenizer#forName}), for writing one: the Split expressions in Hugging Face's spelling
 * (contractions as {@code (?i:'s|…)}), or none where GPT-2's byte-level expression does the splitting.
 *
 * @param splitExpressions the Split expressions, applied in order; empty for GPT-2's byte-level splitting
 * @param ignoreMerges     whether a word that is itself a token is taken whole (the Llama 3 family)
 * @param addBosDefault    whether BOS is added when the file does not say
 * @param nfc              whether the text is NFC-normalised first (the Qwen2 family)
 */
public record HfPreTokenization(List<String> splitExpressions, boolean ignoreMerges, boolean addBosDefault, boolean nfc) {

    /** llama.cpp's contraction group, and Hugging Face's spelling of it. */
    private static final String CONTRACTIONS_JAVA = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
    private static final String CONTRACTIONS_HF = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";

    public HfPreTokenization {
        splitExpressions = List.copyOf(splitExpressions);
    }

    /** The meaning of {@code pre}, or empty for a name the loader does not know. */
    public static Optional<HfPreTokenization> forGgufName(String pre) {
        PreTokenizer p;
        try {
            p = PreTokenizer.forName(pre);
        } catch (dev.forkpoint.InvalidInputException e) {
            return Optional.empty();
        }
        List<String> stored = p.expressions().stream().map(Pattern::pattern).toList();
        boolean gpt2 = stored.equals(List.of(PreTokenizer.GPT2));
        List<String> hf = gpt2 ? List.of() : stored.stream().map(HfPreTokenization::hfSpelling).toList();
        return Optional.of(new HfPreTokenization(hf, p.ignoreMerges(), p.addBosDefault(), stored.equals(List.of(PreTokenizer.QWEN2))));
    }

    /** {@code regex} with llama.cpp's spelling of the contraction group replaced by Hugging Face's. */
    static String hfSpelling(String regex) {
        return regex.replace(CONTRACTIONS_JAVA, CONTRACTIONS_HF);
    }
}
