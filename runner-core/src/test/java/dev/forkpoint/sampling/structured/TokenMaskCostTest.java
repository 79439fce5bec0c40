package dev.forkpoint.sampling.structured;

import dev.forkpoint.TestData;
import dev.forkpoint.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;

import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The per-token cost of a structured-output mask over a 151,643-token vocabulary (Qwen2's): a valid document is
 * tokenized and fed through a fresh {@link TokenConstraint}, the mask computed before every token (cache cold at the
 * start of each pass, as for a new request). Prints µs per token; README quotes the number.
 *
 * <pre>mvn -o -pl runner-core -am test -Dtest=TokenMaskCostTest -Dsurefire.failIfNoSpecifiedTests=false</pre>
 */
class TokenMaskCostTest {
    static final String SCHEMA = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":40},"
            + "\"age\":{\"type\":\"integer\"},\"email\":{\"type\":\"string\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
            + "\"maxLength\":20},\"maxItems\":8},\"address\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
            + "\"zip\":{\"type\":\"string\",\"pattern\":\"^[0-9]{5}$\"}},\"required\":[\"city\",\"zip\"]},"
            + "\"status\":{\"enum\":[\"active\",\"inactive\",\"banned\"]}},\"required\":[\"name\",\"age\",\"email\",\"tags\",\"address\",\"status\"]}";
    static final String DOCUMENT = "{\"name\": \"Ada Lovelace, Countess of Lovelace\", \"age\": 36, \"email\": "
            + "\"ada@analytical-engine.example.org\", \"tags\": [\"mathematics\", \"poetry of science\", \"engines\"], "
            + "\"address\": {\"city\": \"London, Marylebone\", \"zip\": \"12345\"}, \"status\": \"inactive\"}";

    @Test
    void maskCostPerTokenOnQwenVocabulary() {
        Tokenizer tokenizer = Tokenizer.fromPath(TestData.shared("tokenizers/qwen2"));
        long t0 = System.nanoTime();
        TokenTrie vocab = TokenTrie.of(tokenizer);
        long build = System.nanoTime() - t0;
        GrammarNode grammar = JsonSchemaGrammar.compile(JsonSchemaGrammarTest.schema(SCHEMA));
        int[] ids = tokenizer.encode(DOCUMENT, false, false);
        double best = Double.MAX_VALUE;
        long computed = 0;
        for (int pass = 0; pass < 8; pass++) {
            TokenConstraint c = new TokenConstraint(grammar, vocab);
            long start = System.nanoTime();
            for (int id : ids) {
                assertTrue(c.isAllowed(id), "token " + id + " (" + tokenizer.piece(id) + ") of a valid document was masked");
                c.accept(id);
            }
            assertTrue(c.complete());
            long[] end = c.allowed();
            for (int e : vocab.endOfGeneration) assertTrue((end[e >>> 6] & (1L << e)) != 0);
            best = Math.min(best, (System.nanoTime() - start) / 1e3 / ids.length);
            computed = c.masksComputed();
        }
        System.out.println(String.format(Locale.ROOT, "structured-output mask: vocabulary %d, %s, built in %.0f ms; %d tokens, "
                        + "%d masks computed; %.1f us per token (best of 8 passes, cache cold per pass)",
                vocab.vocabSize, vocab, build / 1e6, ids.length, computed, best));
        assertTrue(best < 20_000, "mask cost " + best + " us per token");
    }
}
