package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;

/**
 * A request whose prompt, or prompt plus the tokens it asks to generate, does not fit its context: the one context
 * check every API's requests go through ({@link Generation#plan}), with one wording for all of them. The message names
 * the numbers and the engine's field names ({@value #NUM_PREDICT}); an API reports it under its own field names
 * ({@link #message(String)} with e.g. {@code max_tokens}).
 *
 * @see #promptAlone()
 */
public final class ContextOverflowException extends InvalidInputException {
    /** The engine's name for the tokens a request asks to generate. */
    public static final String NUM_PREDICT = "num_predict";

    private final int promptTokens;
    private final int numPredict;
    private final int numCtx;

    ContextOverflowException(int promptTokens, int numPredict, int numCtx) {
        super(text(promptTokens, numPredict, numCtx, NUM_PREDICT));
        this.promptTokens = promptTokens;
        this.numPredict = numPredict;
        this.numCtx = numCtx;
    }

    /** The prompt's tokens (BOS included). */
    public int promptTokens() { return promptTokens; }

    /** The tokens asked for (≥ 1), or −1 when the prompt alone does not fit. */
    public int numPredict() { return numPredict; }

    /** The context the request runs in. */
    public int numCtx() { return numCtx; }

    /** Whether the prompt alone fills the context (else the prompt plus {@link #numPredict()} exceeds it). */
    public boolean promptAlone() { return numPredict < 0; }

    /** The message with {@code predictField} naming the tokens asked for (as the API calls that field). */
    public String message(String predictField) {
        return text(promptTokens, numPredict, numCtx, predictField);
    }

    private static String text(int promptTokens, int numPredict, int numCtx, String predictField) {
        if (numPredict < 0) {
            return "prompt is " + promptTokens + " tokens but num_ctx is " + numCtx + "; shorten the prompt or raise num_ctx";
        }
        return "prompt (" + promptTokens + " tokens) + " + predictField + " (" + numPredict + ") exceeds num_ctx " + numCtx;
    }
}
