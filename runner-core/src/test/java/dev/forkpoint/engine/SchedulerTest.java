package dev.forkpoint.engine;

import dev.forkpoint.TestData;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Continuous batching against independent expectations: every batched generation is compared with the same request
 * run alone through {@link LoadedModel#generate} (its own cache salt, so both evaluate the whole prompt), and the
 * pool's pages with what must be left once nothing runs. Mostly on {@link SyntheticLlama} (its greedy replies run to
 * num_predict, so streams overlap for as long as the test needs), once on stories260K.
 */
class SchedulerTest {
    @TempDir
    static Path dir;
    static LoadedModel model;
    static FaultyOps faults;

    @BeforeAll
    static void load() throws Exception {
        Path gguf = SyntheticLlama.write(dir.resolve("synthetic.gguf"), 4096, 3);
        model = LoadedModel.load(gguf, 2, LoadProgress.NONE);
        model.decorateOps(ops -> faults = new FaultyOps(ops));
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    static GenerationRequest request(String prompt, int numPredict, String salt) {
        return GenerationRequest.of(prompt, SamplingOptions.greedy().withNumPredict(numPredict)).withCacheSalt(salt);
    }

    /** All events of a stream up to its final one. */
    static List<GenerationEvent> events(GenerationStream stream) throws InterruptedException {
        List<GenerationEvent> out = new ArrayList<>();
        for (GenerationEvent e; (e = stream.poll(Duration.ofSeconds(60))) != null; ) {
            out.add(e);
            if (e instanceof GenerationEvent.Done || e instanceof GenerationEvent.Failed) return out;
        }
        throw new AssertionError("stream did not end within 60 s; events so far: " + out);
    }

    static GenerationResult done(List<GenerationEvent> events) {
        GenerationEvent last = events.getLast();
        if (last instanceof GenerationEvent.Failed f) throw new AssertionError("generation failed", f.error());
        GenerationResult r = ((GenerationEvent.Done) last).result();
        StringBuilder text = new StringBuilder();
        for (GenerationEvent e : events) if (e instanceof GenerationEvent.Text t) text.append(t.piece());
        assertEquals(r.text(), text.toString(), "streamed text = the result's text");
        assertInstanceOf(GenerationEvent.Started.class, events.getFirst());
        return r;
    }

    static void assertSameGeneration(GenerationResult expected, GenerationResult actual, String what) {
        assertArrayEquals(expected.generatedIds(), actual.generatedIds(), what);
        assertEquals(expected.text(), actual.text(), what);
        assertEquals(expected.doneReason(), actual.doneReason(), what);
    }

    /** Waits until no sequence runs (the scheduler publishes after sending a final event, within its step). */
    static SchedulerStats idle(Scheduler s) throws InterruptedException {
        for (int i = 0; i < 600; i++) {
            SchedulerStats st = s.stats();
            if (st.running() == 0 && st.queued() == 0) return st;
            Thread.sleep(10);
        }
        throw new AssertionError("scheduler still busy: " + s.stats());
    }

    /**
     * Requests that reach an idle scheduler within its gathering window start together: their prompts share the first
     * pass, and they decode in the same passes from then on (each still equal to its run alone). Submitted one by one
     * from other threads, without the model's lock; the window is long (10 s) so that no slow machine misses it, and
     * the fourth arrival ends it.
     */
    @Test
    void arrivalsAtAnIdleSchedulerShareTheirFirstPass() throws Exception {
        String[] prompts = {"the quick brown fox", "a b c", SyntheticLlama.text(30, 1), "zebra stripes and more"};
        GenerationResult[] alone = new GenerationResult[4];
        for (int i = 0; i < 4; i++) alone[i] = model.generate(request(prompts[i], 16, "gather alone " + i), p -> {});
        faults.record(true);
        try (Scheduler s = new Scheduler(model, SchedulerOptions.defaults().withParallel(4), 10_000_000_000L)) {
            GenerationStream[] byIndex = new GenerationStream[4];
            for (int i = 0; i < 4; i++) {
                int k = i;
                Thread t = Thread.ofPlatform().start(() -> byIndex[k] = s.submit(request(prompts[k], 16, "gather " + k)));
                t.join();
                Thread.sleep(20);   // arrivals apart, as clients' are
            }
            for (int i = 0; i < 4; i++) {
                GenerationResult r = done(events(byIndex[i]));
                assertSameGeneration(alone[i], r, "prompt " + i);
            }
            assertEquals(0, idle(s).kvPagesLive());
        } finally {
            faults.record(false);
        }
        // The first step admits all four and evaluates their prompts: in one pass when their rows fit what the backend
        // computes exactly as alone (the native kernels: any number; the Java kernels: 16), else a pass per prompt.
        // From then on they decode together.
        List<List<FaultyOps.SegmentSeen>> passes = faults.passes();
        int promptPasses = 0;
        while (passes.get(promptPasses).stream().anyMatch(seg -> seg.tokens() > 1 || seg.startPos() == 0)) promptPasses++;
        List<FaultyOps.SegmentSeen> prompted = passes.subList(0, promptPasses).stream().flatMap(List::stream).toList();
        assertEquals(4, prompted.stream().map(FaultyOps.SegmentSeen::kv).distinct().count(), "four prompts before any decode row");
        int rows = prompted.stream().mapToInt(FaultyOps.SegmentSeen::tokens).sum();
        assertEquals(rows <= model.invariantRows() ? 1 : 4, promptPasses,
                "passes for the four prompts (" + rows + " rows, " + model.invariantRows() + " computed as alone)");
        assertEquals(4, passes.get(promptPasses).size(), "the four decode rows in the next pass");
    }

    @ParameterizedTest
    @ValueSource(ints = {4, 1})
    void concurrentGreedyStreamsEqualSequentialRuns(int parallel) throws Exception {
        String[] prompts = {"the quick brown fox", "a b c", SyntheticLlama.text(30, 1), "zebra stripes and more"};
        GenerationResult[] alone = new GenerationResult[4];
        for (int i = 0; i < 4; i++) alone[i] = model.generate(request(prompts[i], 48, "alone " + i), p -> {});
        faults.record(true);
        try (Scheduler s = new Scheduler(model, SchedulerOptions.defaults().withParallel(parallel))) {
            List<GenerationStream> streams = new ArrayList<>();
            synchronized (model) {   // steps hold the model's lock: all four are queued before the first step
                for (int i = 0; i < 4; i++) streams.add(s.submit(request(prompts[i], 48, "batched " + parallel + " " + i)));
            }
            for (int i = 0; i < 4; i++) {
                GenerationResult r = done(events(streams.get(i)));
                assertEquals(48, r.generatedIds().length);
                assertSameGeneration(alone[i], r, "prompt " + i + " with parallel " + parallel);
            }
            assertEquals(0, idle(s).kvPagesLive());
        } finally {
            faults.record(false);
        }
        int widest = faults.passes().stream().mapToInt(List::size).max().orElse(0);
        if (parallel == 4) assertEquals(4, widest, "the four decode rows shared passes");
        else assertEquals(1, widest);
    }

    @Test
    void storiesConcurrentGreedyStreamsEqualSequentialRuns() throws Exception {
        try (LoadedModel stories = LoadedModel.load(TestData.shared("models/stories260K.gguf"), 2, LoadProgress.NONE);
             Scheduler s = new Scheduler(stories, SchedulerOptions.defaults())) {
            String[] prompts = {"Once upon a time", "The little dog", "Lily wanted to", "One day, a big bird"};
            GenerationResult[] alone = new GenerationResult[4];
            for (int i = 0; i < 4; i++) alone[i] = stories.generate(request(prompts[i], 60, "alone " + i), p -> {});
            List<GenerationStream> streams = new ArrayList<>();
            for (int i = 0; i < 4; i++) streams.add(s.submit(request(prompts[i], 60, "batched " + i)));
            for (int i = 0; i < 4; i++) assertSameGeneration(alone[i], done(events(streams.get(i))), prompts[i]);
        }
    }

    @Test
    void cancelledStreamReleasesItsPagesAndCachesItsTokensWhileOthersFinish() throws Exception {
        String longPrompt = "a generation that will be cancelled";
        GenerationResult a = model.generate(request("first other", 48, "alone a"), p -> {});
        GenerationResult b = model.generate(request("second other", 48, "alone b"), p -> {});
        model.cache().evictAll();
        assertEquals(0, model.cacheStats().usedPages(), "baseline: an empty pool");
        try (Scheduler s = new Scheduler(model, SchedulerOptions.defaults())) {
            GenerationStream cancelled = s.submit(request(longPrompt, 3000, "cancel"));
            GenerationStream sa = s.submit(request("first other", 48, "batched a"));
            GenerationStream sb = s.submit(request("second other", 48, "batched b"));
            List<GenerationEvent> seen = new ArrayList<>();
            int texts = 0;
            while (texts < 5) {
                GenerationEvent e = cancelled.poll(Duration.ofSeconds(60));
                assertNotNull(e);
                assertFalse(e instanceof GenerationEvent.Done || e instanceof GenerationEvent.Failed, "ended early: " + e);
                seen.add(e);
                if (e instanceof GenerationEvent.Text) texts++;
            }
            cancelled.cancel();
            seen.addAll(events(cancelled));
            GenerationEvent.Failed end = assertInstanceOf(GenerationEvent.Failed.class, seen.getLast());
            assertInstanceOf(GenerationCancelledException.class, end.error());
            assertSameGeneration(a, done(events(sa)), "first other");
            assertSameGeneration(b, done(events(sb)), "second other");
            SchedulerStats st = idle(s);
            assertEquals(0, st.kvPagesLive());
            assertEquals(0, st.kvPagesReserved());
            assertEquals(st.kvPagesTotal(), st.kvPagesUsed() + st.kvPagesFree());
        }
        // the cancelled generation's committed tokens were cached: its prompt is now a full hit
        GenerationResult again = model.generate(request(longPrompt, 1, "cancel"), p -> {});
        assertEquals(again.promptTokens() - 1, again.cachedTokens());
        model.cache().evictAll();
        assertEquals(0, model.cacheStats().usedPages(), "every page came back: nothing held by a dead sequence");
    }

    @Test
    void aFullQueueRefusesWhileOthersRun() throws Exception {
        try (Scheduler s = new Scheduler(model, SchedulerOptions.defaults().withParallel(1).withQueueLimit(1))) {
            GenerationStream running = s.submit(request("running", 3000, "queue"));
            assertInstanceOf(GenerationEvent.Started.class, running.poll(Duration.ofSeconds(60)));
            GenerationStream waiting = s.submit(request("waiting", 10, "queue"));
            QueueFullException e = assertThrows(QueueFullException.class, () -> s.submit(request("refused", 10, "queue")));
            assertTrue(e.retryAfterSeconds() > 0);
            assertTrue(e.getMessage().contains("limit 1"), e.getMessage());
            assertEquals(1, s.stats().queued());
            assertEquals(1, s.stats().running());
            running.cancel();
            assertInstanceOf(GenerationCancelledException.class, ((GenerationEvent.Failed) events(running).getLast()).error());
            done(events(waiting));   // the waiting request runs once the slot is free
        }
    }

    @Test
    void aFaultInOneSequenceFailsOnlyThatOne() throws Exception {
        String faultyPrompt = SyntheticLlama.text(40, 9);                         // 41 tokens with BOS
        String[] others = {SyntheticLlama.text(8, 10), SyntheticLlama.text(8, 11), SyntheticLlama.text(8, 12)};
        GenerationResult[] alone = new GenerationResult[others.length];
        for (int i = 0; i < others.length; i++) alone[i] = model.generate(request(others[i], 30, "fault alone " + i), p -> {});
        GenerationResult faultyAlone = model.generate(request(faultyPrompt, 30, "fault alone"), p -> {});
        int faultAt = 41 + 3;   // the faulty sequence's 4th decode step; the others never reach it (9 + 30 positions)
        faults.failWhen(seg -> seg.startPos() == faultAt && seg.tokens().length == 1);
        try (Scheduler s = new Scheduler(model, SchedulerOptions.defaults())) {
            GenerationStream faulty;
            List<GenerationStream> streams = new ArrayList<>();
            synchronized (model) {   // steps hold the model's lock: all four are queued before the first step
                faulty = s.submit(request(faultyPrompt, 30, "fault batched"));
                for (int i = 0; i < others.length; i++) streams.add(s.submit(request(others[i], 30, "fault batched " + i)));
            }
            GenerationEvent.Failed failed = assertInstanceOf(GenerationEvent.Failed.class, events(faulty).getLast());
            assertInstanceOf(FaultyOps.InjectedFault.class, failed.error());
            for (int i = 0; i < others.length; i++) assertSameGeneration(alone[i], done(events(streams.get(i))), "other " + i);
            assertTrue(faults.batchedFaults() > 0, "the fault hit a pass shared with other sequences");
            faults.disarm();
            // the runner keeps serving, and the faulty prompt's cache entry is sound
            assertSameGeneration(faultyAlone, done(events(s.submit(request(faultyPrompt, 30, "fault batched")))), "faulty prompt again");
            assertEquals(0, idle(s).kvPagesLive());
        } finally {
            faults.disarm();
        }
    }

    @Test
    void aLongPromptIsPrefilledInBudgetSizedChunksMixedIntoTheDecodeSteps() throws Exception {
        int stepTokens = 8;
        try (Scheduler s = new Scheduler(model, SchedulerOptions.defaults().withParallel(2).withStepTokens(stepTokens))) {
            GenerationStream decoding = s.submit(request("keeps decoding", 3000, "chunks"));
            while (!(decoding.poll(Duration.ofSeconds(60)) instanceof GenerationEvent.Text)) { /* until it streams */ }
            faults.record(true);
            String longPrompt = SyntheticLlama.text(60, 20);   // 61 tokens
            GenerationResult r = done(events(s.submit(request(longPrompt, 5, "chunks long"))));
            faults.record(false);
            decoding.cancel();
            events(decoding);
            assertEquals(61, r.evaluatedPromptTokens());

            List<List<FaultyOps.SegmentSeen>> passes = faults.passes();
            Object longKv = passes.stream().flatMap(List::stream).filter(g -> g.tokens() > 1).findFirst().orElseThrow().kv();
            int expectedStart = 0, decodePassesSinceChunk = 0, chunks = 0;
            for (List<FaultyOps.SegmentSeen> pass : passes) {
                for (FaultyOps.SegmentSeen seg : pass) {
                    if (seg.kv() != longKv) {
                        assertEquals(1, seg.tokens(), "the other stream only decodes");
                        decodePassesSinceChunk++;
                    } else if (seg.startPos() < 61) {
                        // a prefill chunk of the long prompt, in the decoding stream's pass: 8 rows at most, which the
                        // Java decode kernels compute exactly as alone, so the scheduler mixes them
                        assertEquals(2, pass.size(), "the chunk rides in the decode pass");
                        assertEquals(1, pass.getFirst().tokens(), "the decode row comes first");
                        assertEquals(expectedStart, seg.startPos(), "chunks are contiguous");
                        assertTrue(seg.tokens() <= stepTokens - 1, "a chunk within the budget left by one decode row: " + seg.tokens());
                        if (chunks > 0) assertTrue(decodePassesSinceChunk > 0, "the decoding stream advanced between chunks " + chunks + " and " + (chunks + 1));
                        expectedStart += seg.tokens();
                        decodePassesSinceChunk = 0;
                        chunks++;
                    }
                }
            }
            assertEquals(61, expectedStart);
            assertEquals((61 + stepTokens - 2) / (stepTokens - 1), chunks);
            assertTrue(passes.stream().anyMatch(p -> p.size() == 2), "once prefilled, both decode in one pass");
        } finally {
            faults.record(false);
        }
    }

    @Test
    void whileAStreamDecodesAPrefillGetsTheStepTimeLeftAndAloneTheWholeBudget() throws Exception {
        // passes cost 4 ms + 2 ms a row: a step bound of 20 ms leaves room for about (20 - 6) / 2 = 7 prefill tokens
        // beside one decode row, where the token budget alone (512) would take the whole prompt at once
        try (Scheduler s = new Scheduler(model, SchedulerOptions.defaults().withParallel(2).withStepMillis(20))) {
            faults.slowDown(Duration.ofMillis(4), Duration.ofMillis(2));
            GenerationStream decoding = s.submit(request("keeps decoding while timed", 3000, "timed"));
            while (!(decoding.poll(Duration.ofSeconds(60)) instanceof GenerationEvent.Text)) { /* until it streams */ }
            faults.record(true);
            String longPrompt = SyntheticLlama.text(120, 21);
            GenerationResult r = done(events(s.submit(request(longPrompt, 2, "timed long"))));
            faults.record(false);
            decoding.cancel();
            events(decoding);
            int promptTokens = r.evaluatedPromptTokens();
            assertTrue(promptTokens > 100, "prompt tokens " + promptTokens);

            List<Integer> chunks = new ArrayList<>();
            Object longKv = null;
            for (List<FaultyOps.SegmentSeen> pass : faults.passes()) {
                for (FaultyOps.SegmentSeen seg : pass) {
                    if (seg.tokens() > 1 || (longKv != null && seg.kv() == longKv && seg.startPos() < promptTokens)) {
                        longKv = seg.kv();
                        if (seg.startPos() < promptTokens) chunks.add(seg.tokens());
                    }
                }
            }
            assertEquals(promptTokens, chunks.stream().mapToInt(Integer::intValue).sum(), "chunks " + chunks);
            // the first chunks teach the costs (StepCosts.FIRST_CHUNK while unknown); after that the bound holds (the
            // last chunk is what the prompt had left)
            List<Integer> bounded = chunks.subList(Math.min(chunks.size(), 3), Math.max(Math.min(chunks.size(), 3), chunks.size() - 1));
            assertFalse(bounded.isEmpty(), "chunks " + chunks);
            for (int c : bounded) {
                assertTrue(c >= StepCosts.MIN_CHUNK && c <= 12, "a chunk sized by the 20 ms bound: " + c + " of " + chunks);
            }

            // alone, the same prompt is prefilled in one pass: no stream waits for it
            faults.record(true);
            GenerationResult alone = done(events(s.submit(request(longPrompt, 2, "timed alone"))));
            faults.record(false);
            assertEquals(promptTokens, alone.evaluatedPromptTokens());
            assertEquals(promptTokens, faults.passes().getFirst().getFirst().tokens(), "one chunk of the whole prompt");
        } finally {
            faults.slowDown(Duration.ZERO, Duration.ZERO);
            faults.record(false);
        }
    }

    @Test
    void admissionNeverOvercommitsASmallPool() throws Exception {
        Path gguf = dir.resolve("synthetic.gguf");
        KvLayout layout = KvLayout.of(SyntheticLlama.LAYERS, SyntheticLlama.KV_HEADS * SyntheticLlama.HEAD_DIM, KvElementType.F32);
        // each request: 21 prompt + 100 generated positions = 8 pages (+1 for copy-on-write); the pool holds 14
        try (LoadedModel small = LoadedModel.load(gguf, 2, LoadProgress.NONE, EngineOptions.defaults().withKvCacheBytes(14 * layout.pageBytes()));
             Scheduler s = new Scheduler(small, SchedulerOptions.defaults().withParallel(4))) {
            String[] prompts = new String[4];
            GenerationResult[] alone = new GenerationResult[4];
            for (int i = 0; i < 4; i++) {
                prompts[i] = SyntheticLlama.text(20, 30 + i);
                alone[i] = small.generate(request(prompts[i], 100, "alone " + i), p -> {});
            }
            List<GenerationStream> streams = new ArrayList<>();
            for (int i = 0; i < 4; i++) streams.add(s.submit(request(prompts[i], 100, "batched " + i)));
            for (int i = 0; i < 4; i++) assertSameGeneration(alone[i], done(events(streams.get(i))), "request " + i);
            assertEquals(0, idle(s).kvPagesLive());
        }
    }
}
