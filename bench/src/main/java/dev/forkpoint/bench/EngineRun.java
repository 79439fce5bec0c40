package dev.forkpoint.bench;

/**
 * One measured completion.
 *
 * @param promptTokens    prompt tokens evaluated (BOS included)
 * @param promptNanos     time the engine spent evaluating the prompt
 * @param generatedTokens tokens generated
 * @param decodeNanos     time the engine spent generating them
 * @param wallNanos       wall-clock time of the whole request as seen by the caller
 * @param timingSource    where the prompt/decode times come from ("engine" accounting, or "wall" clock fallback)
 */
record EngineRun(int promptTokens, long promptNanos, int generatedTokens, long decodeNanos, long wallNanos,
                 String timingSource) {
    double prefillTokensPerSecond() { return promptNanos <= 0 ? 0 : promptTokens * 1e9 / promptNanos; }

    double decodeTokensPerSecond() { return decodeNanos <= 0 ? 0 : generatedTokens * 1e9 / decodeNanos; }
}
