package dev.forkpoint.tokenizer;

import dev.forkpoint.format.gguf.GgufFile;

/**
 * Text ↔ token ids for one vocabulary. Built from GGUF metadata ({@code tokenizer.ggml.*}), encoding as llama.cpp
 * does for the same file, or from Hugging Face tokenizer files, encoding as the Hugging Face library does. Immutable and safe to share between threads (a {@link StreamingDecoder} is not).
 */
public interface Tokenizer {
    /**
     * Builds the tokenizer the file's {@code tokenizer.ggml.model} names ("llama" or "gpt2"). The result does not
     * refer to the file afterwards. Throws {@link dev.forkpoint.format.ModelFormatException} for a missing or unknown
     * model or inconsistent arrays, {@link dev.forkpoint.InvalidInputException} for an unsupported
     * {@code tokenizer.ggml.pre}.
     */
    static Tokenizer fromGguf(GgufFile file) {
        return TokenizerLoader.load(file);
    }

    /**
     * Builds a tokenizer from Hugging Face files, encoding as the Hugging Face {@code tokenizers} library does:
     * a {@code tokenizer.json} (BPE model: byte-level or SentencePiece-style), a tiktoken {@code tokenizer.model}
     * (Llama 3), or a model folder with one of those or {@code vocab.json} + {@code merges.txt} (Qwen2, GPT-2).
     * In a folder, {@code tokenizer_config.json} ({@code add_bos_token}, {@code add_eos_token}, {@code bos_token},
     * {@code eos_token}, {@code added_tokens_decoder}) and {@code generation_config.json} ({@code eos_token_id})
     * override what the tokenizer file implies; a file given alone is read as it is. Throws {@link dev.forkpoint.format.ModelFormatException} naming
     * the file and field for anything missing, malformed or unsupported (such as a SentencePiece protobuf model).
     */
    static Tokenizer fromPath(java.nio.file.Path fileOrFolder) {
        return TokenizerFiles.load(fileOrFolder);
    }

    /** "llama" (SentencePiece BPE) or "gpt2" (byte-level BPE), as in {@code tokenizer.ggml.model}. */
    String model();

    int vocabSize();

    /**
     * Encodes text. {@code addSpecial}: add BOS/EOS as the model's {@code add_bos_token}/{@code add_eos_token} say.
     * {@code parseSpecial}: text such as "&lt;|im_start|&gt;" becomes its special token instead of being split.
     */
    int[] encode(String text, boolean addSpecial, boolean parseSpecial);

    /**
     * The text of ids; control tokens (BOS, EOS, …) render as nothing. Where the vocabulary adds a space prefix
     * (SentencePiece), the first token's leading space (at the start or right after a leading BOS) is dropped, so
     * {@code decode(encode(text, …, false)) == text} for text the vocabulary can represent.
     * Invalid UTF-8 becomes U+FFFD. Throws {@link dev.forkpoint.InvalidInputException} for ids outside the vocabulary.
     */
    String decode(int[] ids);

    /**
     * The bytes token {@code id} contributes to generated text: empty for control, unknown and unused tokens; the
     * byte itself for {@code <0xNN>} tokens; "▁" as space (llama); GPT-2 byte characters as their bytes (gpt2).
     */
    byte[] tokenBytes(int id);

    /** The token's piece as stored in the vocabulary, for display. */
    String piece(int id);

    /** BOS id, or -1 when the vocabulary has none. */
    int bosId();

    /** EOS id, or -1. */
    int eosId();

    /** EOT (end of turn) id, or -1. */
    int eotId();

    /** Whether {@code encode(text, true, …)} puts BOS first. */
    boolean addsBos();

    /** Whether {@code encode(text, true, …)} puts EOS last. */
    boolean addsEos();

    /** True for ids that end generation: EOS, EOT, EOM and other end-of-generation ids from metadata. */
    boolean isEndOfGeneration(int id);

    /** A decoder for streaming output that never returns a partial UTF-8 sequence. */
    default StreamingDecoder streamingDecoder() {
        return new StreamingDecoder(this);
    }
}
