package dev.forkpoint.reference;

import dev.forkpoint.convert.ModelQuantizer;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Forkpoint and llama.cpp (bundled in {@code de.kherud:llama}) must produce the same greedy continuation of
 * "Once upon a time" on stories260K in F32 and quantized by Forkpoint's {@code ModelQuantizer} to Q8_0 and Q4_0 —
 * the same file read by both, token by token up to the first near tie of the exact logits ({@link #peerMinGap});
 * Forkpoint must also agree with the float64 reference at every step where the exact logits have a clear winner. The peer itself is first checked against llama2.c on
 * the F32 file.
 */
class LlamaCppParityTest {
    static final int TOKENS = 80;

    @TempDir
    static Path dir;

    private static StoriesReference expected;

    @BeforeAll
    static void load() throws IOException {
        expected = StoriesReference.load();
    }

    @Test
    void llamaCppMatchesLlama2cOnF32() {
        int n = expected.generatedTokens().length;
        LlamaCpp.Completion c = LlamaCpp.greedy(StoriesReference.model(), expected.prompt(), n);
        assertEquals(n, c.pieces().size(), "tokens streamed by llama.cpp");
        assertEquals(expected.text(), expected.prompt() + c.text());
    }

    /**
     * How far the two engines are compared: up to the first step whose exact (float64) top-1 − top-2 gap is below
     * this. For quantized weights both engines round activations to 8 bits the same way (Forkpoint's logits equal a
     * float64 simulation of llama.cpp's Q8_0/Q8_K rounding to ~1e-7 in most runs), but 8-bit rounding is chaotic: one
     * rounding flipped by a float-order difference (or llama.cpp's F16 KV cache) perturbs the next layer's roundings,
     * and within a few layers the two engines carry different, equally valid rounding noise, which moves a gap by up
     * to 0.087 here (measured against the exact logits). Measured on stories260K: Q4_0 parts from llama.cpp at
     * step 74, where the exact gap is 0.0047; Q8_0's closest call in 80 steps is 0.050 and it holds.
     * For F32 weights nothing is rounded and 0.01 suffices.
     */
    static double peerMinGap(GgmlType type) {
        return type == GgmlType.F32 ? 0.01 : 0.05;
    }

    /**
     * Where the exact gap is at least this, Forkpoint must pick the reference's token: 0.25 is ~3× the largest gap
     * error its 8-bit activations cause on these files (0.087).
     */
    static double referenceMinGap(GgmlType type) {
        return type == GgmlType.F32 ? 0.01 : 0.25;
    }

    /** Fewer comparable tokens than this would make the comparison weak; the file then fails the test. */
    static final int MIN_COMPARED = 60;

    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"F32", "Q8_0", "Q4_0"})
    void forkpointGreedyTokensEqualLlamaCpp(GgmlType type) throws Exception {
        Path model = type == GgmlType.F32 ? StoriesReference.model() : quantized(type);
        LlamaCpp.Completion peer = LlamaCpp.greedy(model, expected.prompt(), TOKENS);
        int[] prompt;
        int[] ids;
        List<String> ourPieces = new ArrayList<>();
        try (LoadedModel engine = LoadedModel.load(model, 2, LoadProgress.NONE)) {
            prompt = engine.tokenizer().encode(expected.prompt(), true, false);
            GenerationResult ours = engine.generate(
                    GenerationRequest.of(expected.prompt(), SamplingOptions.greedy().withNumPredict(TOKENS)), piece -> {});
            ids = ours.generatedIds();
            // stories260K's vocabulary is ASCII, so every token is a whole piece of text, as llama.cpp streams it.
            for (int id : ids) ourPieces.add(new String(engine.tokenizer().tokenBytes(id), StandardCharsets.UTF_8));
        }

        // Walk Forkpoint's continuation with the float64 reference on the same file.
        ReferenceTransformer reference;
        try (GgufFile file = GgufFile.open(model)) {
            reference = ReferenceTransformer.load(file);
        }
        var sequence = reference.newSequence();
        double[] exact = null;
        for (int t : prompt) exact = sequence.next(t);
        int comparable = ids.length;
        double tie = Double.NaN;
        int referenceChecked = 0;
        for (int i = 0; i < ids.length; i++) {
            int best = ReferenceTransformer.argMax(exact);
            double second = Double.NEGATIVE_INFINITY;
            for (int j = 0; j < exact.length; j++) if (j != best) second = Math.max(second, exact[j]);
            double gap = exact[best] - second;
            if (gap < peerMinGap(type) && comparable == ids.length) {
                comparable = i;
                tie = gap;
            }
            if (gap >= referenceMinGap(type)) {
                assertEquals(best, ids[i], type + ": Forkpoint's token at step " + i + " vs the float64 reference (gap " + gap + ")");
                referenceChecked++;
            }
            exact = sequence.next(ids[i]);
        }
        System.out.printf("LlamaCppParityTest %s: llama.cpp %d tokens, Forkpoint %d; compared with llama.cpp %d (%s), "
                        + "with the reference %d%n", type, peer.pieces().size(), ids.length, comparable,
                comparable == ids.length ? "no near tie" : String.format("exact gap %.4f at step %d", tie, comparable),
                referenceChecked);
        assertTrue(comparable >= Math.min(MIN_COMPARED, ids.length),
                type + ": the exact logits have a near tie at step " + comparable + ", too early for the comparison");
        assertTrue(peer.pieces().size() >= comparable, type + ": llama.cpp stopped after " + peer.pieces().size() + " tokens");
        assertEquals(peer.pieces().subList(0, comparable), ourPieces.subList(0, comparable), type + ": greedy tokens (as pieces)");
        if (comparable == ids.length) assertEquals(peer.text(), String.join("", ourPieces), type + ": greedy text");
    }

    /** stories260K quantized to {@code type} by Forkpoint's quantizer (dev.forkpoint.convert.ModelQuantizer). */
    private static Path quantized(GgmlType type) throws IOException {
        Path out = dir.resolve("stories260K-" + type.name().toLowerCase() + ".gguf");
        if (!java.nio.file.Files.exists(out)) ModelQuantizer.quantize(StoriesReference.model(), out, type);
        return out;
    }
}
