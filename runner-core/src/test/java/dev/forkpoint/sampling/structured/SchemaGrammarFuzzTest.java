package dev.forkpoint.sampling.structured;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.tokenizer.Tokenizer;

import java.nio.charset.StandardCharsets;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed JSON schemas (as a client sends them in {@code format}, {@code response_format} or a tool's input schema,
 * patterns included) compiled to grammars: compiled or refused with a typed error naming what was wrong; then fuzzed
 * bytes matched against the grammar, and masks computed over a small byte-level vocabulary at every state reached: a
 * token the mask allows must advance the state, and an accepting state must allow end-of-generation.
 */
class SchemaGrammarFuzzTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static TokenTrie vocab;

    private static synchronized TokenTrie vocab() {
        if (vocab == null) vocab = TokenTrie.of(ByteVocabulary.INSTANCE);
        return vocab;
    }

    @FuzzTest
    void compileAndMatch(FuzzedDataProvider data) throws Exception {
        String text = data.consumeString(3000);
        JsonNode schema;
        try {
            schema = JSON.readTree(text);
        } catch (Exception e) {
            return;
        }
        if (schema == null) return;
        GrammarNode[] g = new GrammarNode[1];
        if (FuzzInvariant.typedErrorOrValid(() -> g[0] = JsonSchemaGrammar.compile(schema)) != null) return;
        TokenConstraint c = new TokenConstraint(g[0], vocab());
        MatchState s = MatchState.start(g[0]);
        byte[] bytes = data.consumeRemainingAsBytes();
        for (int i = 0; i < bytes.length && s != null; i++) {
            long[] mask = c.allowed();
            int b = bytes[i] & 0xff;
            boolean allowed = (mask[b >>> 6] & (1L << b)) != 0;
            MatchState next = s.advance(b);
            check(allowed == (next != null), "mask says " + allowed + " for byte " + b + " after "
                    + new String(bytes, 0, i, StandardCharsets.UTF_8));
            if (next == null) break;
            c.accept(b);
            s = next;
            if (s.accepting()) check((c.allowed()[ByteVocabulary.EOS >>> 6] & (1L << ByteVocabulary.EOS)) != 0, "EOS masked at an accepting state");
        }
    }

    /** 256 byte tokens and an EOS (256). */
    static final class ByteVocabulary implements Tokenizer {
        static final ByteVocabulary INSTANCE = new ByteVocabulary();
        static final int EOS = 256;

        public String model() { return "gpt2"; }
        public int vocabSize() { return 257; }
        public int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
            byte[] b = text.getBytes(StandardCharsets.UTF_8);
            int[] ids = new int[b.length];
            for (int i = 0; i < b.length; i++) ids[i] = b[i] & 0xff;
            return ids;
        }
        public String decode(int[] ids) {
            byte[] b = new byte[ids.length];
            int n = 0;
            for (int id : ids) if (id < 256) b[n++] = (byte) id;
            return new String(b, 0, n, StandardCharsets.UTF_8);
        }
        public byte[] tokenBytes(int id) { return id < 256 ? new byte[] {(byte) id} : new byte[0]; }
        public String piece(int id) { return id < 256 ? "<" + id + ">" : "</s>"; }
        public int bosId() { return -1; }
        public int eosId() { return EOS; }
        public int eotId() { return -1; }
        public boolean addsBos() { return false; }
        public boolean addsEos() { return false; }
        public boolean isEndOfGeneration(int id) { return id == EOS; }
    }
}
