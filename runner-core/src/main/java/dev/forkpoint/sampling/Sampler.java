package dev.forkpoint.sampling;

/** Chooses the next token from logits according to {@link SamplingOptions}. One per generation (it holds the RNG). */
public final class Sampler {
    public Sampler(SamplingOptions options, int vocabSize) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /**
     * Picks a token. {@code logits} may be modified. {@code history} holds the ids seen so far (prompt and generated),
     * of which the first {@code historyLength} are valid; penalties look at the last repeat_last_n of them.
     */
    public int sample(float[] logits, int[] history, int historyLength) {
        throw new UnsupportedOperationException("not implemented yet");
    }
}
