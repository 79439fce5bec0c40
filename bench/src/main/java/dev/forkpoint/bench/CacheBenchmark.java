package dev.forkpoint.bench;

import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.tokenizer.Tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * FACTS §1 B as a measurement: one long prompt that opens with a session id, sent three times through the engine's
 * prefix cache (in-process, {@link LoadedModel#generate}, greedy, one generated token): as is into an empty cache, then
 * with its last character changed, then with the session id changed. A token-exact cache evaluates the whole prompt
 * the first time, one token the second time (the changed one: every token before it is reused), and everything from
 * the session id on the third (causal attention: nothing after a change can be reused by any runner). Ollama's MLX
 * runner re-prefilled 7,961 of 65,304 tokens in the second case because it restores only at 8,192-token captures.
 */
final class CacheBenchmark {
    private CacheBenchmark() {}

    /** The three prompts of the scenario and where the session id starts (in characters). */
    record Prompts(String base, String lastCharChanged, String sessionChanged, int sessionIdAt) {
        List<String> inOrder() { return List.of(base, lastCharChanged, sessionChanged); }
    }

    /** One case as measured. TTFT: the call until the first token was sampled (one token generated, nothing else). */
    record Case(String name, int promptTokens, int evaluated, int reused, long ttftNanos, long promptNanos) {}

    static final List<String> CASE_NAMES = List.of("cold: empty cache", "same prompt, last character changed",
            "same prompt, session id changed");

    /**
     * Prompts of about {@code targetTokens} tokens (BOS included) for {@code tokenizer}: "session &lt;uuid&gt;", a
     * newline, then {@link PromptText} words. Exact for the byte-level vocabulary of generated models (one token per
     * character); for other tokenizers the length is fitted by re-encoding (within 0.5 %).
     */
    static Prompts prompts(Tokenizer tokenizer, int targetTokens) {
        String head = "session " + new UUID(0x6A09E667F3BCC908L, 0xBB67AE8584CAA73BL) + "\n";
        String otherHead = "session " + new UUID(0x3C6EF372FE94F82BL, 0xA54FF53A5F1D36F1L) + "\n";
        int chars = Math.max(1, targetTokens - head.length() - 1);
        String body = PromptText.of(chars, 11);
        for (int i = 0; i < 12; i++) {
            int n = tokenizer.encode(head + body, true, false).length;
            if (Math.abs(n - targetTokens) <= targetTokens / 200) break;
            chars = Math.max(1, chars + (int) Math.round((targetTokens - n) * (double) (head.length() + chars) / n));
            body = PromptText.of(chars, 11);
        }
        String base = head + body;
        char last = base.charAt(base.length() - 1);
        String changed = base.substring(0, base.length() - 1) + (last == 'x' ? 'y' : 'x');
        return new Prompts(base, changed, otherHead + body, "session ".length());
    }

    /**
     * Runs the three prompts in order on {@code model} (whose cache should be empty) and measures each. First, a
     * warm-up request of {@code warmUpChars} characters of other text in a cache namespace of its own (it can share
     * nothing with the scenario's prompts) compiles the kernels, so the cold case is cold for the cache, not the JIT.
     */
    static List<Case> run(LoadedModel model, Prompts prompts, int numCtx, int numBatch, int warmUpChars) {
        return run(model, prompts, numCtx, numBatch, warmUpChars, c -> { });
    }

    /** As above, handing each case to {@code done} as soon as it is measured. */
    static List<Case> run(LoadedModel model, Prompts prompts, int numCtx, int numBatch, int warmUpChars, Consumer<Case> done) {
        if (warmUpChars > 0) {
            model.generate(new GenerationRequest(PromptText.of(warmUpChars, 99), SamplingOptions.greedy().withNumPredict(1), numCtx, numBatch)
                    .withCacheSalt("bench-cache-warm-up"), piece -> { });
        }
        List<Case> out = new ArrayList<>();
        List<String> ordered = prompts.inOrder();
        for (int i = 0; i < ordered.size(); i++) {
            var request = new GenerationRequest(ordered.get(i), SamplingOptions.greedy().withNumPredict(1), numCtx, numBatch);
            long start = System.nanoTime();
            GenerationResult r = model.generate(request, piece -> { });
            long ttft = System.nanoTime() - start;
            Case c = new Case(CASE_NAMES.get(i), r.promptTokens(), r.evaluatedPromptTokens(), r.cachedTokens(), ttft, r.promptNanos());
            out.add(c);
            done.accept(c);
        }
        return out;
    }
}
