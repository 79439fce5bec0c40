package dev.forkpoint.reference;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checks the float64 reference's reading of each architecture against llama.cpp (an implementation it shares no
 * code with) on the random F32 models: greedy continuations of a byte prompt must agree (qwen3 is skipped: the
 * bundled llama.cpp is too old for it; its reading is covered by the engine comparison alone). llama.cpp exposes only
 * text, so generation is restricted to the printable ASCII byte tokens (32–126, one character each) on both sides;
 * the reference also asserts that every step's winning margin is large enough that llama.cpp's own rounding
 * (F16 KV cache, float32 sums: relative error ~1e-3) cannot flip it.
 */
class LlamaCppArchitectureTest {
    static final String PROMPT = "Hello, world";
    static final int TOKENS = 24;
    /**
     * The smallest top-1 − top-2 logit gap accepted at any step. Logits have rms ≈ 1 and llama.cpp's rounding moves
     * them by ~4e-4 (rounding activations to F16 does that, see {@link ArchitectureLogitsTest#bound}), so 4e-3 is
     * a 10× margin.
     */
    static final double MIN_MARGIN = 4e-3;

    @TempDir
    static Path dir;

    static boolean allowed(int id) {
        return id >= 32 && id <= 126;
    }

    @ParameterizedTest
    @EnumSource(RandomModels.Variant.class)
    void referenceGreedyMatchesLlamaCpp(RandomModels.Variant variant) throws IOException {
        Assumptions.assumeFalse(variant == RandomModels.Variant.QWEN3,
                "de.kherud:llama 4.1.0 bundles llama.cpp b4916, which predates the qwen3 architecture");
        Path model = RandomModels.write(dir, variant, GgmlType.F32, ArchitectureLogitsTest.SEED);
        List<Integer> banned = new ArrayList<>();
        for (int id = 0; id < RandomModels.VOCAB; id++) if (!allowed(id)) banned.add(id);
        LlamaCpp.Completion peer = LlamaCpp.greedy(model, PROMPT, TOKENS, banned);

        ReferenceTransformer reference;
        try (GgufFile file = GgufFile.open(model)) {
            reference = ReferenceTransformer.load(file);
        }
        boolean bos = variant.architecture.equals("llama"); // add_bos_token as RandomModels writes it
        var sequence = reference.newSequence();
        double[] logits = null;
        if (bos) logits = sequence.next(RandomModels.BOS);
        for (char c : PROMPT.toCharArray()) logits = sequence.next(c);
        var text = new StringBuilder();
        double smallestMargin = Double.POSITIVE_INFINITY;
        for (int i = 0; i < TOKENS; i++) {
            int best = -1, second = -1;
            for (int id = 0; id < logits.length; id++) {
                if (!allowed(id)) continue;
                if (best < 0 || logits[id] > logits[best]) { second = best; best = id; }
                else if (second < 0 || logits[id] > logits[second]) second = id;
            }
            smallestMargin = Math.min(smallestMargin, logits[best] - logits[second]);
            text.append((char) best);
            if (i + 1 < TOKENS) logits = sequence.next(best);
        }
        System.out.printf("LlamaCppArchitectureTest %s: reference \"%s\", llama.cpp \"%s\", smallest margin %.3f%n",
                variant, text, peer.text(), smallestMargin);
        assertTrue(smallestMargin > MIN_MARGIN, "a near tie makes this seed unusable: margin " + smallestMargin);
        assertEquals(text.toString(), peer.text(), variant + ": greedy continuation");
    }
}
