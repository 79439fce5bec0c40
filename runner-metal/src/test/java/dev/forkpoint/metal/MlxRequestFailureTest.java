package dev.forkpoint.metal;

import dev.forkpoint.backend.BackendChoice;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxTestLibrary;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * MLX failures inside requests, end to end through the engine (`--backend mlx`): 100 greedy requests on stories260K,
 * every third with a genuine MLX shape error injected at a random matrix product of its prefill or decode
 * ({@link MlxFaults}). A failed request gets MLX's own message; every other request's text equals the CPU backend's
 * for the same prompt (so the failures left no trace in the KV or the prefix cache); and after the last request the
 * memory MLX holds is what it held after the first.
 */
@Tag("mlx")
class MlxRequestFailureTest {

    @AfterEach
    void clear() {
        MlxFaults.clear();
    }

    private static Path stories() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path f = p.resolveSibling("shared").resolve("models/stories260K.gguf");
            if (Files.isRegularFile(f)) return f;
        }
        throw new AssertionError("stories260K.gguf not found in ../shared/models");
    }

    private static GenerationRequest request(String prompt) {
        return new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(6), 0, GenerationRequest.NUM_BATCH_DEFAULT);
    }

    @Test
    void aHundredRequestsWithInjectedMlxFailures() throws Exception {
        Mlx mlx = MlxTestLibrary.require();
        String[] starts = {"Once upon a time", "The little dog", "Lily and Tom went", "One day, a bird", "The sun was"};
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < 100; i++) prompts.add(starts[i % starts.length] + (i % 2 == 0 ? "" : " " + starts[(i / 2) % starts.length].toLowerCase()));
        List<String> expected = new ArrayList<>();
        try (LoadedModel cpu = LoadedModel.load(stories(), 1, LoadProgress.NONE, EngineOptions.defaults().withBackend(BackendChoice.CPU).withKernels(KernelChoice.JAVA))) {
            for (String p : prompts) expected.add(cpu.generate(request(p), piece -> {}).text());
        }
        EngineOptions onMlx = EngineOptions.defaults().withBackend(BackendChoice.MLX).withMlxLibrary(mlx.where());
        try (LoadedModel model = LoadedModel.load(stories(), 1, LoadProgress.NONE, onMlx)) {
            assertEquals("mlx", model.backendName());
            Random random = new Random(5);
            long afterFirst = -1;
            int failed = 0;
            for (int i = 0; i < prompts.size(); i++) {
                if (i % 3 == 2) {
                    MlxFaults.shapeErrorInMatmul(1 + random.nextInt(120));   // stories260K: 43 products a step
                    int at = i;
                    RuntimeException e = assertThrows(RuntimeException.class, () -> model.generate(request(prompts.get(at)), piece -> {}),
                            "request " + i + " with an injected MLX failure");
                    assertTrue(String.valueOf(e.getMessage()).contains("matmul"), "MLX's own message reaches the request: " + e.getMessage());
                    MlxFaults.clear();
                    failed++;
                    continue;
                }
                GenerationResult r = model.generate(request(prompts.get(i)), piece -> {});
                assertEquals(expected.get(i), r.text(), "request " + i + " after " + failed + " failed ones");
                if (afterFirst < 0) afterFirst = mlx.activeMemory();
            }
            assertEquals(33, failed);
            GenerationResult last = model.generate(request(prompts.getFirst()), piece -> {});
            assertEquals(expected.getFirst(), last.text());
            assertEquals(afterFirst, mlx.activeMemory(), "mlx_get_active_memory after 100 requests (33 failed) and one more, against after the first");
        }
    }
}
