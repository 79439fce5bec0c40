package dev.forkpoint.tokenizer;

import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;

/** Builds the tokenizer a GGUF file's {@code tokenizer.ggml.model} names. */
final class TokenizerLoader {
    /** SentencePiece vocabularies converted by llama.cpp: {@code <unk>}=0, {@code <s>}=1, {@code </s>}=2. */
    private static final Vocabulary.Defaults LLAMA = new Vocabulary.Defaults(1, 2, 0, true, true);

    private TokenizerLoader() {}

    static Tokenizer load(GgufFile file) {
        String key = Vocabulary.PREFIX + "model";
        if (!file.has(key)) throw new ModelFormatException(file.path(), "metadata " + key, "missing (the file has no tokenizer)");
        String model = file.getString(key);
        return switch (model) {
            case "llama" -> new SpmTokenizer(new Vocabulary(file, model, LLAMA));
            case "gpt2" -> {
                PreTokenizer pre = PreTokenizer.forName(file.getString(Vocabulary.PREFIX + "pre", "default"));
                String[] merges = file.has(Vocabulary.PREFIX + "merges") ? file.getStringArray(Vocabulary.PREFIX + "merges") : new String[0];
                var defaults = new Vocabulary.Defaults(-1, -1, -1, pre.addBosDefault(), false);
                yield new BpeTokenizer(new Vocabulary(file, model, defaults), pre, merges);
            }
            default -> throw new ModelFormatException(file.path(), "metadata " + key,
                    "tokenizer model \"" + model + "\" is not supported (supported: llama, gpt2)");
        };
    }
}
