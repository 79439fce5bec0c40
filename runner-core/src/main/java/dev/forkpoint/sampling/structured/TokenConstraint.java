package dev.forkpoint.sampling.structured;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tokenizer.Tokenizer;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One generation's structured-output constraint: where the output stands in its {@link GrammarNode} and, at each
 * step, which tokens may come next ({@link #allowed()}): those whose bytes continue a match, and the
 * end-of-generation tokens only where the output is a complete match. Masks are cached per {@link MatchState} (a
 * state comes back often: between the characters of a string without a length bound, after every item of an array,
 * …), at most {@value #CACHED_MASKS} of them. Not thread-safe: one per generation.
 */
public final class TokenConstraint {
    static final int CACHED_MASKS = 256;

    private final TokenTrie vocab;
    private MatchState state;
    private final Map<MatchState, long[]> masks = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<MatchState, long[]> eldest) {
            return size() > CACHED_MASKS;
        }
    };
    private long masksComputed, masksCached;
    private final java.io.ByteArrayOutputStream text = new java.io.ByteArrayOutputStream();

    public TokenConstraint(GrammarNode grammar, Tokenizer tokenizer) {
        this(grammar, TokenTrie.of(tokenizer));
    }

    TokenConstraint(GrammarNode grammar, TokenTrie vocab) {
        this.vocab = vocab;
        this.state = MatchState.start(grammar);
    }

    /**
     * The tokens allowed next, as a bit set over the vocabulary (bit i of word i / 64). The array is shared with the
     * cache: do not modify it.
     *
     * @throws InvalidInputException when no token can continue an incomplete match (the vocabulary cannot spell what
     *                               the grammar requires)
     */
    public long[] allowed() {
        long[] m = masks.get(state);
        if (m != null) {
            masksCached++;
            return m;
        }
        m = compute(state);
        masksComputed++;
        masks.put(state, m);
        return m;
    }

    private long[] compute(MatchState s) {
        long[] mask;
        int budget = s.plainStringBudget();
        if (budget >= 0) {
            mask = vocab.plainUpTo(budget).clone();
        } else {
            mask = new long[vocab.words];
            walk(vocab.plain, 0, s, mask);
        }
        walk(vocab.other, 0, s, mask);
        boolean any = false;
        for (long w : mask) any |= w != 0;
        if (s.accepting()) {
            for (int id : vocab.endOfGeneration) mask[id >>> 6] |= 1L << id;
        } else if (!any) {
            throw new InvalidInputException("structured output: no token of this model's vocabulary can continue the output "
                    + "(the schema needs characters the vocabulary cannot spell) after \"" + tail() + "\"");
        }
        return mask;
    }

    private static void walk(TokenTrie.Trie t, int node, MatchState s, long[] mask) {
        for (int e = t.edgeStart[node], end = t.edgeStart[node + 1]; e < end; e++) {
            MatchState next = s.advance(t.edgeByte[e] & 0xff);
            if (next == null) continue;
            int child = t.edgeTarget[e];
            for (int k = t.tokenStart[child], kEnd = t.tokenStart[child + 1]; k < kEnd; k++) {
                int id = t.tokens[k];
                mask[id >>> 6] |= 1L << id;
            }
            if (t.edgeStart[child] < t.edgeStart[child + 1]) walk(t, child, next, mask);
        }
    }

    /** The last bytes of the output so far, as text, for messages. */
    private String tail() {
        byte[] b = text.toByteArray();
        int from = Math.max(0, b.length - 120);
        return (from > 0 ? "…" : "") + new String(b, from, b.length - from, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Whether token {@code id} may come next. */
    public boolean isAllowed(int id) {
        return id >= 0 && id < vocab.vocabSize && (allowed()[id >>> 6] & (1L << id)) != 0;
    }

    /**
     * Moves past a generated token (not an end-of-generation one).
     *
     * @throws IllegalStateException when the token is not allowed (the sampler ignored the mask)
     */
    public void accept(int id) {
        MatchState next = id >= 0 && id < vocab.vocabSize ? state.advance(vocab.bytes[id]) : null;
        if (next == null || vocab.bytes[id].length == 0) {
            throw new IllegalStateException("token " + id + " does not continue the structured output");
        }
        state = next;
        text.writeBytes(vocab.bytes[id]);
    }

    /** Whether the output so far is a complete match (it may end here). */
    public boolean accepting() { return state.accepting(); }

    /** Whether the output is a complete match that nothing can extend: generation ends here. */
    public boolean complete() { return state.complete(); }

    /** Masks computed (cache misses) and reused so far. */
    public long masksComputed() { return masksComputed; }

    public long masksCached() { return masksCached; }

    /**
     * Sets every logit the mask does not allow to −∞ (ids beyond the vocabulary too), in place: what the sampler
     * does before temperature, top_k and top_p.
     */
    public static void apply(float[] logits, long[] allowed) {
        int n = logits.length;
        for (int w = 0; w * 64 < n; w++) {
            long bits = w < allowed.length ? allowed[w] : 0;
            if (bits == -1L) continue;
            int base = w * 64, end = Math.min(n, base + 64);
            for (int i = base; i < end; i++) if ((bits & (1L << (i - base))) == 0) logits[i] = Float.NEGATIVE_INFINITY;
        }
    }
}
