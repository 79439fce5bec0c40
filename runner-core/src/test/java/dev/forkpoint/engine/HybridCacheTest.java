package dev.forkpoint.engine;

import dev.forkpoint.HybridTestModel;
import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Locale;
import java.util.SplittableRandom;

import static dev.forkpoint.engine.Vectors.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Seed scenario B on a hybrid model (the tiny Qwen3.5, Gated DeltaNet ×3 + attention, with a 16k context): the
 * recurrent state is restored from checkpoints at exact fork points, so a 9,001-token prompt changed in its last
 * character re-evaluates ≤ 3 tokens, one changed 100 tokens before its end ≤ 220, and one changed near its start
 * everything after the change. Every time the logits equal, bit for bit, those of a fresh sequence that evaluates the
 * same chunks (so the restored state is exactly the state the first run had there), and agree within float rounding
 * ({@link #LOGIT_TOLERANCE}) with a fresh request (a namespace of its own), whose chunks differ at the fork point;
 * the greedy token is the same.
 */
class HybridCacheTest {
    static final int CONTEXT = 16_384;
    static final int LONG = 9_001;

    @TempDir
    static Path dir;
    static LoadedModel model;
    static final LogitsRecorder recorder = new LogitsRecorder();
    static FaultyOps faulty;   // records passes, injects faults

    /** Records the logits of the last evaluation that produced any. */
    static final class LogitsRecorder {
        volatile float[] last;
    }

    @BeforeAll
    static void load() throws Exception {
        Path folder = HybridTestModel.write(dir, "dense", CONTEXT, false);
        KvLayout layout = KvLayout.of(1, 2 * 32, KvElementType.F32);
        model = LoadedModel.load(folder, 2, LoadProgress.NONE, EngineOptions.defaults().withKvCacheBytes(layout.budgetFor(CONTEXT, 4)));
        model.decorateOps(ops -> faulty = new FaultyOps(ops));
        model.decorateOps(ops -> new ForwardingOps(ops) {
            public float[][] logits(Activation x, Weight output) {
                float[][] out = delegate.logits(x, output);
                recorder.last = out[out.length - 1].clone();
                return out;
            }
        });
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    /** Random lowercase words of ≥ {@code tokens} GPT-2 tokens, cut to exactly that many tokens. */
    static String text(int tokens, long seed) {
        var rng = new SplittableRandom(seed);
        StringBuilder sb = new StringBuilder();
        Tokenizer t = model.tokenizer();
        while (t.encode(sb.toString(), false, false).length < tokens) {
            for (int i = 0; i < 500; i++) {
                sb.append(' ');
                int len = 2 + rng.nextInt(7);
                for (int j = 0; j < len; j++) sb.append((char) ('a' + rng.nextInt(26)));
            }
        }
        int[] ids = t.encode(sb.toString(), false, false);
        return t.decode(java.util.Arrays.copyOf(ids, tokens));
    }

    /** One greedy token of {@code prompt} in namespace {@code salt}: the result and the prompt's last logits. */
    record Run(GenerationResult result, float[] logits) {}

    static Run run(String prompt, String salt) {
        var request = new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(1), CONTEXT,
                GenerationRequest.NUM_BATCH_DEFAULT).withCacheSalt(salt);
        GenerationResult r = model.generate(request, piece -> {});
        return new Run(r, recorder.last);
    }

    static int tokens(String prompt) {
        return model.tokenizer().encode(prompt, true, true).length;
    }

    /** Evaluates {@code tokens} in a fresh sequence (nothing cached), in exactly the given (start, length) chunks. */
    static synchronized float[] replay(int[] tokens, java.util.List<int[]> chunks) {
        int expected = 0;
        for (int[] c : chunks) {
            assertEquals(expected, c[0], "chunks must cover the prompt in order");
            expected += c[1];
        }
        assertEquals(tokens.length, expected, "chunks must cover the whole prompt");
        try (var sequence = model.pool().newSequence()) {
            var kv = model.newKvStore(sequence);
            float[] logits = null;
            synchronized (model) {
                for (int[] c : chunks) {
                    boolean last = c[0] + c[1] == tokens.length;
                    float[] l = model.evaluate(new int[][] {java.util.Arrays.copyOfRange(tokens, c[0], c[0] + c[1])},
                            new dev.forkpoint.backend.KvStore[] {kv}, last)[0];
                    if (last) logits = l;
                }
            }
            return logits;
        }
    }

    /**
     * How far a resumed prompt's logits may be from a fresh computation's: they are computed in different chunks (a
     * resumed prompt's chunks end at its fork point, a fresh one's do not; the CPU kernels are bit-identical across
     * batches of up to 16 rows, not between a 16-row and a 512-row pass or the recurrent and chunked delta rule), so
     * float rounding differs. A wrong or stale state would move them by orders of magnitude more.
     */
    static final double LOGIT_TOLERANCE = 1e-4;

    /** Runs {@code changed} after {@code original} in one namespace, and fresh in a namespace of its own. */
    static Run resumedAndCheckedAgainstFresh(String original, String changed, String salt) {
        faulty.record(true);
        Run first = run(original, salt);
        var firstPasses = faulty.passes();
        assertEquals(tokens(original), first.result().evaluatedPromptTokens(), "a new namespace evaluates everything");
        faulty.record(true);
        long t0 = System.nanoTime();
        Run resumed = run(changed, salt);
        long t1 = System.nanoTime();
        var resumedPasses = faulty.passes();
        faulty.record(false);
        // the checkpoint restores exactly the state the first run had there: a fresh sequence evaluating the same
        // chunks (the first run's up to the resume point, then the resumed run's) gives the same logits bit for bit
        int resume = resumed.result().cachedTokens();
        java.util.List<int[]> chunks = new java.util.ArrayList<>();
        for (var pass : firstPasses) {
            var seg = pass.getFirst();
            if (seg.startPos() + seg.tokens() <= resume) chunks.add(new int[] {seg.startPos(), seg.tokens()});
        }
        for (var pass : resumedPasses) chunks.add(new int[] {pass.getFirst().startPos(), pass.getFirst().tokens()});
        assertArrayEquals(replay(model.tokenizer().encode(changed, true, true), chunks), resumed.logits(),
                "the resumed prompt's logits equal those of a fresh sequence evaluating the same chunks, bit for bit");
        Run fresh = run(changed, salt + " fresh");
        long t2 = System.nanoTime();
        assertEquals(tokens(changed), fresh.result().evaluatedPromptTokens());
        double diff = maxDiff(fresh.logits(), resumed.logits());
        assertTrue(diff <= LOGIT_TOLERANCE, "the resumed prompt's logits differ from a fresh computation's by " + diff);
        assertArrayEquals(fresh.result().generatedIds(), resumed.result().generatedIds());
        System.out.printf(Locale.ROOT, "hybrid %s: %d tokens, resumed at %d: evaluated %d in %.0f ms (fresh: %d in %.0f ms), logits within %.1e%n", salt,
                tokens(changed), resumed.result().cachedTokens(), resumed.result().evaluatedPromptTokens(), (t1 - t0) / 1e6,
                fresh.result().evaluatedPromptTokens(), (t2 - t1) / 1e6, diff);
        return resumed;
    }

    @Test
    void aLongPromptChangedInItsLastCharacterEvaluatesAtMostThreeTokens() {
        String prompt = text(LONG - 1, 1);   // + BOS? GPT-2 adds none: the prompt is LONG − 1 tokens … checked below
        String base = prompt + " zq";
        assertTrue(tokens(base) >= LONG - 1 && tokens(base) <= LONG + 2, "prompt of " + tokens(base) + " tokens");
        String changed = base.substring(0, base.length() - 1) + 'x';
        Run r = resumedAndCheckedAgainstFresh(base, changed, "last character");
        assertTrue(r.result().evaluatedPromptTokens() <= 3, "evaluated " + r.result().evaluatedPromptTokens());
    }

    @Test
    void aLongPromptChanged100TokensBeforeItsEndEvaluatesAtMost220() {
        String prompt = text(LONG, 2);
        int[] ids = model.tokenizer().encode(prompt, false, false);
        int at = model.tokenizer().decode(java.util.Arrays.copyOf(ids, ids.length - 100)).length();
        while (!Character.isLetter(prompt.charAt(at))) at++;
        char c = prompt.charAt(at);
        String changed = prompt.substring(0, at) + (c == 'q' ? 'j' : 'q') + prompt.substring(at + 1);
        Run r = resumedAndCheckedAgainstFresh(prompt, changed, "100 before the end");
        assertTrue(r.result().evaluatedPromptTokens() <= 220, "evaluated " + r.result().evaluatedPromptTokens());
    }

    @Test
    void aSessionIdChangedNearTheStartReevaluatesEverythingAfterIt() {
        String body = text(3_000, 3);
        String original = "session 5f2c9a71. " + body, changed = "session 0b8e44d3. " + body;
        Run r = resumedAndCheckedAgainstFresh(original, changed, "session id");
        assertTrue(r.result().evaluatedPromptTokens() >= tokens(changed) - 4, "evaluated " + r.result().evaluatedPromptTokens()
                + " of " + tokens(changed) + ": everything after the session id");
    }

    private static int deltaCalls;

    /** True on every {@code nth} gated-delta-rule call of a pass (counting calls across passes: layers 0, 1, 2, 0, …). */
    private static boolean layerSeen(java.util.List<dev.forkpoint.backend.Segment> s, int nth) {
        return ++deltaCalls % 3 == nth % 3;
    }

    /**
     * A fault inside a linear layer, at prefill and at decode, after that layer wrote its new state into the step: the
     * request fails with the original error, the step rolls back (KV and recurrent state), and the next request on the
     * same prefix gives exactly what a fresh computation gives.
     */
    @Test
    void aFaultInsideALinearLayerRollsTheStateBackAndTheNextRequestEqualsAFreshOne() {
        String prompt = text(300, 4);
        FaultyOps[] faulty = {HybridCacheTest.faulty};
        try {
            Run warm = run(prompt, "fault");   // caches the prompt with its checkpoints
            for (int k : new int[] {1, 2}) {   // 1: in a prefill pass (its second linear layer); 2: in a decode step
                String longer = prompt + text(40, 10 + k);
                int n = tokens(longer);
                var request = new GenerationRequest(longer, SamplingOptions.greedy().withNumPredict(4), CONTEXT, 16).withCacheSalt("fault");
                faulty[0].failDeltaRuleWhen(k == 1 ? s -> s.getFirst().tokens().length > 1 && s.getFirst().startPos() > 300 && layerSeen(s, 2)
                        : s -> s.getFirst().tokens().length == 1 && s.getFirst().startPos() > n);
                var e = org.junit.jupiter.api.Assertions.assertThrows(FaultyOps.InjectedFault.class, () -> model.generate(request, piece -> {}));
                assertTrue(e.getMessage().startsWith("injected fault: gated delta rule"), e.getMessage());
                faulty[0].failDeltaRuleWhen(null);
                Run again = run(longer, "fault"), fresh = run(longer, "fault fresh " + k);
                double diff = maxDiff(fresh.logits(), again.logits());
                assertTrue(diff <= LOGIT_TOLERANCE, "after a fault (call " + k + "), the logits differ from a fresh computation's by " + diff);
                assertArrayEquals(fresh.result().generatedIds(), again.result().generatedIds());
                assertTrue(again.result().cachedTokens() > 0, "the cached prefix is still used after the fault");
            }
            assertEquals(1, warm.result().generatedIds().length);
        } finally {
            faulty[0].failDeltaRuleWhen(null);
        }
    }

    @Test
    void aCheckpointBudgetBeyondTheHeapIsRefusedAtLoadNamingIt() {
        long tooMuch = Runtime.getRuntime().maxMemory();
        var e = org.junit.jupiter.api.Assertions.assertThrows(dev.forkpoint.InvalidInputException.class, () -> LoadedModel.load(
                dev.forkpoint.TestData.shared("models/qwen35-tiny-dense"), 1, LoadProgress.NONE,
                EngineOptions.defaults().withCheckpointBytes(tooMuch)).close());
        assertTrue(e.getMessage().contains("checkpoint") && e.getMessage().contains("heap"), e.getMessage());
    }
}
