package dev.forkpoint.tokenizer;

/** Turns a stream of token ids into text, holding back bytes until they form complete UTF-8 characters. */
public final class StreamingDecoder {
    private final Tokenizer tokenizer;

    public StreamingDecoder(Tokenizer tokenizer) {
        this.tokenizer = tokenizer;
    }

    /** Adds a token and returns the text that is now complete (possibly empty). */
    public String push(int id) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** Returns whatever is held back (incomplete sequences as U+FFFD) and resets. */
    public String flush() {
        throw new UnsupportedOperationException("not implemented yet");
    }
}
