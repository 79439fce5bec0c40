package dev.forkpoint.chat;

import dev.forkpoint.tokenizer.Tokenizer;

/**
 * A {@link StubTokenizer} that counts a template's renders: every render reads {@code eos_token} once
 * ({@code ChatTemplate} asks for its piece), so {@link #renders} goes up by one per render.
 */
final class RenderCountingTokenizer implements Tokenizer {
    private final StubTokenizer stub;
    int renders;

    RenderCountingTokenizer(String eos) {
        this.stub = new StubTokenizer(null, eos, false);
    }

    public String model() { return stub.model(); }
    public int vocabSize() { return stub.vocabSize(); }
    public int[] encode(String text, boolean addSpecial, boolean parseSpecial) { return stub.encode(text, addSpecial, parseSpecial); }
    public String decode(int[] ids) { return stub.decode(ids); }
    public byte[] tokenBytes(int id) { return stub.tokenBytes(id); }
    public String piece(int id) {
        if (id == stub.eosId()) renders++;
        return stub.piece(id);
    }
    public int bosId() { return stub.bosId(); }
    public int eosId() { return stub.eosId(); }
    public int eotId() { return stub.eotId(); }
    public boolean addsBos() { return stub.addsBos(); }
    public boolean addsEos() { return stub.addsEos(); }
    public boolean isEndOfGeneration(int id) { return stub.isEndOfGeneration(id); }
}
