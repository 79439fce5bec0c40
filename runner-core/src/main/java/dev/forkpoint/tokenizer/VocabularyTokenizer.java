package dev.forkpoint.tokenizer;

import dev.forkpoint.InvalidInputException;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** What both GGUF tokenizer models share: special-token handling, BOS/EOS, decoding from per-token bytes. */
abstract sealed class VocabularyTokenizer implements Tokenizer permits SpmTokenizer, BpeTokenizer {
    private static final byte[] NONE = new byte[0];

    final Vocabulary vocab;
    /** The bytes each token contributes to text; empty for control, unknown and unused tokens. */
    private final byte[][] bytes;

    VocabularyTokenizer(Vocabulary vocab) {
        this.vocab = vocab;
        this.bytes = new byte[vocab.size()][];
        for (int id = 0; id < bytes.length; id++) {
            byte[] b = switch (vocab.types[id]) {
                case CONTROL, UNKNOWN, UNUSED, UNDEFINED -> NONE;
                case USER_DEFINED -> vocab.texts[id].getBytes(StandardCharsets.UTF_8);
                case NORMAL, BYTE -> normalBytes(vocab.texts[id], vocab.types[id]);
            };
            bytes[id] = b.length == 0 ? NONE : b;
        }
    }

    /** The text bytes of a normal or byte token. */
    abstract byte[] normalBytes(String text, TokenType type);

    /** Appends the ids of the fragments (plain text and special tokens, in order) to {@code out}. */
    abstract void encodeFragments(List<Fragment> fragments, IdList out);

    @Override
    public String model() { return vocab.model; }

    @Override
    public int vocabSize() { return vocab.size(); }

    @Override
    public int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
        if (text == null) throw new InvalidInputException("text to encode is null");
        IdList out = new IdList();
        if (addSpecial && vocab.addBos) out.add(vocab.bos);
        encodeFragments(SpecialTokenSplitter.split(text, vocab, parseSpecial), out);
        if (addSpecial && vocab.addEos) out.add(vocab.eos);
        return out.toArray();
    }

    /**
     * {@inheritDoc} When the vocabulary adds a space prefix, the space the first token (at the start, or right after
     * a leading BOS) carries is dropped, as SentencePiece does; invalid UTF-8 becomes U+FFFD.
     */
    @Override
    public String decode(int[] ids) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int first = ids.length > 0 && ids[0] == vocab.bos ? 1 : 0;
        for (int i = 0; i < ids.length; i++) {
            byte[] b = tokenBytes(ids[i]);
            int from = i == first && vocab.addSpacePrefix && b.length > 0 && b[0] == ' ' ? 1 : 0;
            out.write(b, from, b.length - from);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Override
    public byte[] tokenBytes(int id) {
        checkId(id);
        byte[] b = bytes[id];
        return b.length == 0 ? NONE : b.clone();
    }

    @Override
    public String piece(int id) {
        checkId(id);
        return vocab.texts[id];
    }

    @Override
    public int bosId() { return vocab.bos; }

    @Override
    public int eosId() { return vocab.eos; }

    @Override
    public boolean isEndOfGeneration(int id) { return vocab.isEndOfGeneration(id); }

    @Override
    public int eotId() { return vocab.eot; }

    @Override
    public boolean addsBos() { return vocab.addBos; }

    @Override
    public boolean addsEos() { return vocab.addEos; }

    private void checkId(int id) {
        if (id < 0 || id >= bytes.length) {
            throw new InvalidInputException("token id " + id + " is outside the vocabulary (size " + bytes.length + ")");
        }
    }
}
