package dev.forkpoint.bench;

import java.io.IOException;

/** An inference engine under comparison, with one model loaded. */
sealed interface BenchEngine extends AutoCloseable permits ForkpointEngine, LlamaCppEngine, JlamaEngine {
    String name();

    /** Tokens the engine's tokenizer makes of {@code text}, without BOS. */
    int countTokens(String text) throws IOException;

    /** Resident memory of the process holding the model, right after loading, in kB (-1 if unknown). */
    long residentKbAfterLoad();

    /** Resident memory of that process now, in kB (-1 if unknown). */
    long residentKbNow() throws IOException;

    /** A greedy completion of {@code prompt}: up to {@code maxTokens} tokens, end-of-generation ignored where possible. */
    EngineRun run(String prompt, int maxTokens) throws IOException;

    @Override
    void close();
}
