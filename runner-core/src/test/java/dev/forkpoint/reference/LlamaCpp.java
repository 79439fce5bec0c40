package dev.forkpoint.reference;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.LlamaOutput;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.args.LogFormat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * llama.cpp (through {@code de.kherud:llama}, bundled natives) as an independent peer: greedy completions of a raw
 * prompt. It exposes no logits and no generated ids, only streamed text — one piece per generated token.
 */
final class LlamaCpp {
    private LlamaCpp() {}

    /** A greedy completion: the streamed pieces (one per generated token) and their concatenation. */
    record Completion(List<String> pieces, String text) {}

    private static boolean silenced;

    static synchronized void silence() {
        if (!silenced) {
            LlamaModel.setLogger(LogFormat.TEXT, (level, message) -> {});
            silenced = true;
        }
    }

    /**
     * Loads {@code model} in llama.cpp and generates up to {@code n} tokens greedily after {@code prompt} (llama.cpp
     * adds BOS as the file says). The model is deliberately not closed: closing can leave the JVM unable to exit
     * (FACTS.md §6); it is small and the test JVM ends soon after.
     */
    static Completion greedy(Path model, String prompt, int n) {
        return greedy(model, prompt, n, List.of());
    }

    /** As {@link #greedy(Path, String, int)} with the ids in {@code banned} never generated (logit bias −∞). */
    static Completion greedy(Path model, String prompt, int n, Collection<Integer> banned) {
        silence();
        var params = new ModelParameters().setModel(model.toString()).setThreads(1).setCtxSize(512).setSeed(1).disableLog();
        LlamaModel llama = new LlamaModel(params);
        var inference = new InferenceParameters(prompt).setTemperature(0).setTopK(1).setRepeatPenalty(1.0f)
                .setNPredict(n).setSeed(1);
        if (!banned.isEmpty()) inference.disableTokenIds(banned);
        List<String> pieces = new ArrayList<>();
        for (LlamaOutput out : llama.generate(inference)) pieces.add(out.text);
        // The stream ends with a final message that carries no token.
        if (!pieces.isEmpty() && pieces.getLast().isEmpty()) pieces.removeLast();
        return new Completion(List.copyOf(pieces), String.join("", pieces));
    }
}
