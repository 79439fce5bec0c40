package dev.forkpoint.chat;

import dev.forkpoint.tokenizer.Tokenizer;

/** Only the special-token pieces a chat template reads (bos_token, eos_token) and whether encoding adds BOS. */
record StubTokenizer(String bos, String eos, boolean addsBos) implements Tokenizer {
    @Override public String model() { return "stub"; }
    @Override public int vocabSize() { return 2; }
    @Override public int[] encode(String text, boolean addSpecial, boolean parseSpecial) { throw new UnsupportedOperationException(); }
    @Override public String decode(int[] ids) { throw new UnsupportedOperationException(); }
    @Override public byte[] tokenBytes(int id) { return new byte[0]; }
    @Override public String piece(int id) { return id == 0 ? bos : eos; }
    @Override public int bosId() { return bos == null ? -1 : 0; }
    @Override public int eosId() { return 1; }
    @Override public int eotId() { return -1; }
    @Override public boolean addsEos() { return false; }
    @Override public boolean isEndOfGeneration(int id) { return id == 1; }
}
