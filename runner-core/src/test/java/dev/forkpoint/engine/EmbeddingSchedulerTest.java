package dev.forkpoint.engine;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.TestData;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Embeddings share a model with running generations through its scheduler ({@link Scheduler#runBetweenSteps}): they
 * run on the scheduler's thread, one between any two steps (a decoding generation gains a token between two of them),
 * the generation's tokens are those it produces alone, the embedding is the one computed directly, and errors reach
 * the caller as they were thrown.
 */
class EmbeddingSchedulerTest {
    static LoadedModel model;

    @BeforeAll
    static void load() throws Exception {
        model = LoadedModel.load(TestData.shared("models/stories260K.gguf"), 1, LoadProgress.NONE);
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    record Seen(String thread, long generated, int running, float[] vector) {}

    @Test
    void embeddingsRunBetweenStepsAndLeaveGenerationsAsTheyWouldBe() throws Exception {
        GenerationRequest request = GenerationRequest.of("Once upon a time", SamplingOptions.greedy().withNumPredict(300)).withCacheSalt("alone");
        GenerationResult alone = model.generate(request, p -> {});
        int[] tokens = model.tokenizer().encode("The little dog", true, true);
        float[] direct = model.embed(tokens, 512);
        try (Scheduler scheduler = new Scheduler(model, SchedulerOptions.defaults())) {
            GenerationStream stream = scheduler.submit(request.withCacheSalt("with embeddings"));
            List<Seen> seen = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                seen.add(scheduler.runBetweenSteps(() -> new Seen(Thread.currentThread().getName(), scheduler.stats().tokensGenerated(),
                        scheduler.stats().running(), model.embed(tokens, 512))));
            }
            GenerationResult together = stream.await();
            assertArrayEquals(alone.generatedIds(), together.generatedIds(), "the generation is the one it makes alone");
            int advanced = 0;
            for (int i = 0; i < seen.size(); i++) {
                Seen s = seen.get(i);
                assertEquals("forkpoint-scheduler", s.thread());
                assertArrayEquals(direct, s.vector(), "embedding " + i);
                if (i > 0 && seen.get(i - 1).running() > 0 && seen.get(i - 1).generated() > 0) {
                    assertTrue(s.generated() > seen.get(i - 1).generated(), "a step between embeddings " + (i - 1) + " and " + i + ": " + seen);
                    advanced++;
                }
            }
            assertTrue(advanced > 0, "the generation ran while embeddings were computed: " + seen);
        }
    }

    @Test
    void aTasksErrorReachesItsCallerAndTheSchedulerKeepsServing() throws Exception {
        try (Scheduler scheduler = new Scheduler(model, SchedulerOptions.defaults())) {
            var e = assertThrows(InvalidInputException.class, () -> scheduler.runBetweenSteps(() -> model.embed(new int[0], 512)));
            assertTrue(e.getMessage().contains("no tokens"), e.getMessage());
            assertEquals(42, scheduler.runBetweenSteps(() -> 42));
            GenerationResult r = scheduler.submit(GenerationRequest.of("Once", SamplingOptions.greedy().withNumPredict(5))).await();
            assertEquals(5, r.generatedIds().length);
        }
    }
}
