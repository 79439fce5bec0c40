package dev.forkpoint.reference;

import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
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

/**
 * Forkpoint and llama.cpp (bundled in {@code de.kherud:llama}) must produce the same greedy continuation of
 * "Once upon a time" on stories260K in F32 and quantized by Forkpoint's {@code ModelQuantizer} to Q8_0 and Q4_0 —
 * the same file read by both. The peer itself is first checked against llama2.c on the F32 file.
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

    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"F32", "Q8_0", "Q4_0"})
    void forkpointGreedyTextEqualsLlamaCpp(GgmlType type) throws Exception {
        Path model = type == GgmlType.F32 ? StoriesReference.model() : quantized(type);
        LlamaCpp.Completion peer = LlamaCpp.greedy(model, expected.prompt(), TOKENS);
        GenerationResult ours;
        List<String> ourPieces = new ArrayList<>();
        try (LoadedModel engine = LoadedModel.load(model, 2, LoadProgress.NONE)) {
            ours = engine.generate(GenerationRequest.of(expected.prompt(), SamplingOptions.greedy().withNumPredict(TOKENS)), piece -> {});
            // stories260K's vocabulary is ASCII, so every token is a whole piece of text, as llama.cpp streams it.
            for (int id : ours.generatedIds()) ourPieces.add(new String(engine.tokenizer().tokenBytes(id), StandardCharsets.UTF_8));
        }
        System.out.printf("LlamaCppParityTest %s: llama.cpp %d tokens, Forkpoint %d tokens%n", type, peer.pieces().size(), ours.generatedIds().length);
        assertEquals(peer.pieces(), ourPieces, type + ": greedy tokens (as pieces)");
        assertEquals(peer.text(), ours.text(), type + ": greedy text");
    }

    /** stories260K quantized to {@code type} by Forkpoint's quantizer (dev.forkpoint.convert.ModelQuantizer). */
    private static Path quantized(GgmlType type) throws Exception {
        Path out = dir.resolve("stories260K-" + type.name().toLowerCase() + ".gguf");
        if (!java.nio.file.Files.exists(out)) ModelQuantizerBridge.quantize(StoriesReference.model(), out, type);
        return out;
    }
}
