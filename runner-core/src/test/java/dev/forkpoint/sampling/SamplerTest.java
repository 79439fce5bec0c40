package dev.forkpoint.sampling;

import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SamplerTest {
    static final int[] NONE = new int[0];

    @Test
    void greedyTakesTheArgmaxAndTheLowestIdOnTies() {
        Sampler s = new Sampler(SamplingOptions.greedy(), 6);
        assertEquals(3, s.sample(new float[]{1, 2, -5, 7, 6.99f, 0}, NONE, 0));
        assertEquals(1, s.sample(new float[]{1, 7, -5, 7, 6, 7}, NONE, 0));
        assertEquals(0, s.sample(new float[]{-1, -1, -1, -1, -1, -1}, NONE, 0));
        float inf = Float.NEGATIVE_INFINITY, nan = Float.NaN;
        assertEquals(4, s.sample(new float[]{inf, nan, inf, nan, -1e30f, inf}, NONE, 0));
        // nothing to draw (a broken model, or penalties that push every token to -inf): a typed error, not an internal one
        var none = assertThrows(dev.forkpoint.InvalidInputException.class, () -> s.sample(new float[]{inf, nan, inf, nan, inf, inf}, NONE, 0));
        assertTrue(none.getMessage().contains("no usable logits"), none.getMessage());
        assertThrows(IllegalArgumentException.class, () -> s.sample(new float[5], NONE, 0));
    }

    @Test
    void greedyIgnoresOtherFiltersAndTheSeed() {
        float[] logits = {0.5f, 3f, 2.9f, -1f};
        for (long seed : new long[]{-1, 0, 1, 99}) {
            Sampler s = new Sampler(SamplingOptions.greedy().withTopK(1).withTopP(0.1).withSeed(seed), 4);
            for (int i = 0; i < 20; i++) assertEquals(1, s.sample(logits.clone(), NONE, 0));
        }
    }

    @Test
    void logitsLongerThanTheVocabularyAreCutToIt() {
        // models whose output is padded past the tokenizer's vocabulary
        assertEquals(1, new Sampler(SamplingOptions.greedy(), 3).sample(new float[]{0, 5, 1, 9, 9}, NONE, 0));
        assertEquals(1, new Sampler(SamplingOptions.defaults().withTopK(0).withTopP(1).withTemperature(0.01).withSeed(1), 3)
                .sample(new float[]{0, 5, 1, 99, 99}, NONE, 0));
    }

    // ---- penalties, hand-computed ----

    static final float[] L = {2, -1, 0.5f, 3, -2, 1};
    static final int[] H = {0, 1, 1, 3, 0, 0, 5};

    static float[] penalised(SamplingOptions o, int[] history, int length) {
        float[] l = L.clone();
        new Sampler(o, L.length).applyPenalties(l, history, length);
        return l;
    }

    static SamplingOptions penalties(double repeat, int lastN, double presence, double frequency) {
        return SamplingOptions.defaults().withRepeatPenalty(repeat).withRepeatLastN(lastN)
                .withPresencePenalty(presence).withFrequencyPenalty(frequency);
    }

    @Test
    void penaltiesOverTheWholeHistory() {
        // counts: id0 ×3, id1 ×2, id3 ×1, id5 ×1. repeat 2: positive /2, negative ×2; then − (count × 0.25 + 0.5)
        float[] expected = {2f / 2 - 1.25f, -1f * 2 - 1.0f, 0.5f, 3f / 2 - 0.75f, -2f, 1f / 2 - 0.75f};
        assertArrayEquals(expected, penalised(penalties(2, -1, 0.5, 0.25), H, H.length), 1e-6f);
        // a window longer than the history is the whole history
        assertArrayEquals(expected, penalised(penalties(2, 1000, 0.5, 0.25), H, H.length), 1e-6f);
    }

    @Test
    void penaltiesOverTheLastN() {
        // last 3 ids: 0, 0, 5
        float[] expected = {2f / 2 - (2 * 0.25f + 0.5f), -1f, 0.5f, 3f, -2f, 1f / 2 - 0.75f};
        assertArrayEquals(expected, penalised(penalties(2, 3, 0.5, 0.25), H, H.length), 1e-6f);
        // only the first historyLength entries count: first 4 ids = 0, 1, 1, 3; last 2 of them = 1, 3
        float[] prefix = {2f, -1f * 2 - 0.75f, 0.5f, 3f / 2 - 0.75f, -2f, 1f};
        assertArrayEquals(prefix, penalised(penalties(2, 2, 0.5, 0.25), H, 4), 1e-6f);
    }

    @Test
    void eachPenaltyAlone() {
        assertArrayEquals(new float[]{2f / 1.5f, -1.5f, 0.5f, 3f / 1.5f, -2f, 1f / 1.5f},
                penalised(penalties(1.5, -1, 0, 0), H, H.length), 1e-6f);
        assertArrayEquals(new float[]{1.6f, -1.4f, 0.5f, 2.6f, -2f, 0.6f},
                penalised(penalties(1, -1, 0.4, 0), H, H.length), 1e-6f);
        assertArrayEquals(new float[]{2f - 0.9f, -1f - 0.6f, 0.5f, 3f - 0.3f, -2f, 1f - 0.3f},
                penalised(penalties(1, -1, 0, 0.3), H, H.length), 1e-6f);
        // negative penalties reward repeats
        assertArrayEquals(new float[]{2.3f, -0.7f, 0.5f, 3.3f, -2f, 1.3f},
                penalised(penalties(1, -1, -0.3, 0), H, H.length), 1e-6f);
        // a zero logit stays zero under repeat_penalty
        float[] zero = {0, 1};
        new Sampler(penalties(3, -1, 0, 0), 2).applyPenalties(zero, new int[]{0}, 1);
        assertArrayEquals(new float[]{0, 1}, zero);
    }

    @Test
    void repeatLastNZeroDisablesAllPenalties() {
        assertArrayEquals(L, penalised(penalties(2, 0, 0.5, 0.25), H, H.length));
        assertArrayEquals(L, penalised(penalties(2, -1, 0.5, 0.25), H, 0));
    }

    @Test
    void penaltiesAreAppliedBeforeGreedy() {
        Sampler s = new Sampler(SamplingOptions.greedy().withRepeatPenalty(1.1), 2);
        assertEquals(1, s.sample(new float[]{3f, 2.9f}, new int[]{0}, 1)); // 3 / 1.1 = 2.73 < 2.9
        assertEquals(0, s.sample(new float[]{3f, 2.9f}, new int[]{1}, 1));
        assertEquals(0, s.sample(new float[]{3f, 2.9f}, new int[]{0, 1}, 2)); // both penalised
        assertEquals(1, s.sample(new float[]{3f, 2.9f}, new int[]{0, 1, 9}, 1)); // entries past length ignored
    }

    @Test
    void repeatPenaltyZeroMakesSeenPositiveTokensWin() {
        // 2 / 0 = +∞: the seen token with a positive logit wins, also when sampling
        Sampler s = new Sampler(SamplingOptions.defaults().withRepeatPenalty(0).withSeed(5), 4);
        for (int i = 0; i < 50; i++) assertEquals(2, s.sample(new float[]{5, 1, 2, -1}, new int[]{2, 3}, 2));
        Sampler two = new Sampler(SamplingOptions.defaults().withRepeatPenalty(0).withSeed(5), 4);
        int[] counts = new int[4];
        for (int i = 0; i < 2000; i++) counts[two.sample(new float[]{5, 1, 2, -1}, new int[]{1, 2}, 2)]++;
        assertEquals(0, counts[0] + counts[3]);
        assertTrue(counts[1] > 800 && counts[2] > 800, Arrays.toString(counts)); // uniform among the +∞ ones
    }

    @Test
    void historyIdsOutsideTheVocabularyAreRejectedWithoutSideEffects() {
        Sampler s = new Sampler(penalties(2, -1, 0, 0), 6);
        assertThrows(IllegalArgumentException.class, () -> s.applyPenalties(L.clone(), new int[]{0, 1, 6}, 3));
        assertThrows(IllegalArgumentException.class, () -> s.applyPenalties(L.clone(), new int[]{0, -1}, 2));
        // the failed calls left no counts behind
        float[] l = L.clone();
        s.applyPenalties(l, new int[]{3}, 1);
        assertArrayEquals(new float[]{2, -1, 0.5f, 1.5f, -2, 1}, l);
    }

    // ---- the efficient paths against a straightforward float64 reference ----

    /** The whole chain done naively: full sort, top_k, softmax, top_p, min_p, temperature. */
    static double[] reference(float[] logits, List<Integer> order, SamplingOptions o) {
        int v = logits.length;
        int n = order.size();
        if (o.topK() > 0) n = Math.min(n, o.topK());
        double max = logits[order.get(0)];
        double z = 0;
        for (int j = 0; j < n; j++) z += Math.exp(logits[order.get(j)] - max);
        if (o.topP() < 1) {
            double cum = 0;
            for (int j = 0; j < n; j++) {
                cum += Math.exp(logits[order.get(j)] - max) / z;
                if (cum >= o.topP()) {
                    n = j + 1;
                    break;
                }
            }
        }
        int m = 0;
        while (m < n && Math.exp(logits[order.get(m)] - max) >= o.minP() * (1 - 1e-12)) m++;
        double[] p = new double[v];
        double sum = 0;
        for (int j = 0; j < m; j++) sum += p[order.get(j)] = Math.exp((logits[order.get(j)] - max) / o.temperature());
        for (int j = 0; j < m; j++) p[order.get(j)] /= sum;
        return p;
    }

    /** Ids by decreasing logit, then increasing id; NaN left out. */
    static List<Integer> order(float[] logits) {
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < logits.length; i++) if (!Float.isNaN(logits[i])) order.add(i);
        order.sort((a, b) -> logits[a] != logits[b] ? Float.compare(logits[b], logits[a]) : Integer.compare(a, b));
        return order;
    }

    @Test
    void filtersMatchTheReferenceOnLargeVocabularies() {
        Random r = new Random(1234);
        int checked = 0;
        for (int vocab : new int[]{1000, 7919, 151_936}) {
            for (double scale : new double[]{0.05, 1, 4, 30}) {
                for (boolean ties : new boolean[]{false, true}) {
                    if (vocab > 100_000 && (ties || scale == 1 || scale == 30)) continue; // keep it fast
                    float[] logits = new float[vocab];
                    for (int i = 0; i < vocab; i++) {
                        double g = r.nextGaussian() * scale;
                        logits[i] = (float) (ties ? Math.rint(g * 2) / 2 : g);
                    }
                    List<Integer> order = order(logits);
                    for (int topK : new int[]{0, 1, 40, 500}) {
                        for (double topP : new double[]{1, 0.95, 0.5, 0.05, 0}) {
                            for (double minP : new double[]{0, 0.05, 0.6}) {
                                boolean big = vocab > 100_000; // the full grid there is slow; keep the paths that scan
                                if (big && (topK == 1 || topK == 500 || topP == 0.05 || minP == 0.05)) continue;
                                SamplingOptions o = SamplingOptions.defaults().withTopK(topK).withTopP(topP)
                                        .withMinP(minP).withTemperature(0.7).withSeed(1);
                                double[] got = new Sampler(o, vocab).probabilities(logits.clone());
                                double[] want = reference(logits, order, o);
                                String what = "vocab " + vocab + " scale " + scale + " ties " + ties + " top_k " + topK
                                        + " top_p " + topP + " min_p " + minP;
                                assertSameSupport(want, got, what);
                                assertArrayEquals(want, got, 1e-9, what);
                                checked++;
                            }
                        }
                    }
                }
            }
        }
        assertTrue(checked > 150, "checked " + checked);
    }

    static void assertSameSupport(double[] want, double[] got, String what) {
        for (int i = 0; i < want.length; i++)
            if ((want[i] > 0) != (got[i] > 0)) throw new AssertionError(what + ": token " + i + " expected p " + want[i] + " got " + got[i]);
    }

    @Test
    void vectorisedDrawsFollowTheSoftmax() {
        // many candidates: the draw walks vectorised exp terms over all ids (no filter), or over gathered candidate
        // ids (min_p or top_p keeping thousands); heavy ids sit in vector bodies, block edges and the tail
        int vocab = 1500;
        float[] logits = new float[vocab];
        Arrays.fill(logits, -2f);
        int[] heavy = {0, 17, 255, 256, 511, 770, 1000, 1023, 1498, 1499};
        for (int j = 0; j < heavy.length; j++) logits[heavy[j]] = 1f + j * 0.25f;
        logits[5] = Float.NaN;
        logits[6] = Float.NEGATIVE_INFINITY;
        SamplingOptions base = SamplingOptions.defaults().withTopK(0).withTopP(1).withTemperature(0.9).withSeed(11);
        for (SamplingOptions o : List.of(base, base.withMinP(1e-6), base.withTopP(0.99999))) {
            double[] p = reference(logits, order(logits), o);
            Sampler s = new Sampler(o, vocab);
            int draws = 20_000;
            int[] counts = new int[vocab];
            for (int i = 0; i < draws; i++) counts[s.sample(logits.clone(), NONE, 0)]++;
            assertEquals(0, counts[5] + counts[6]);
            double restP = 1;
            int restCount = draws;
            for (int id : heavy) {
                restP -= p[id];
                restCount -= counts[id];
                assertWithin(counts[id], draws, p[id], o + ": id " + id);
            }
            assertWithin(restCount, draws, restP, o + ": the light ids together");
        }
    }

    static void assertWithin(int count, int draws, double p, String what) {
        double mean = draws * p, sigma = Math.sqrt(draws * p * (1 - p));
        assertTrue(Math.abs(count - mean) <= 5 * sigma + 1, what + ": drawn " + count + " times, expected " + mean + " ± " + 5 * sigma);
    }

    @Test
    void nanLogitsAreNeverDrawn() {
        float[] logits = {Float.NaN, 1, Float.NaN, 1, Float.NaN};
        for (SamplingOptions o : List.of(SamplingOptions.defaults(), SamplingOptions.defaults().withTopK(0),
                SamplingOptions.defaults().withTopK(0).withTopP(1), SamplingOptions.defaults().withTopK(2))) {
            Sampler s = new Sampler(o.withSeed(3), logits.length);
            for (int i = 0; i < 200; i++) {
                int t = s.sample(logits.clone(), NONE, 0);
                assertTrue(t == 1 || t == 3, o + " drew " + t);
            }
        }
    }

    // ---- seeds ----

    static int[] generate(SamplingOptions o, long logitSeed, int steps) {
        int vocab = 500;
        Random r = new Random(logitSeed);
        Sampler s = new Sampler(o, vocab);
        int[] history = new int[steps];
        for (int step = 0; step < steps; step++) {
            float[] logits = new float[vocab];
            for (int i = 0; i < vocab; i++) logits[i] = (float) r.nextGaussian();
            history[step] = s.sample(logits, history, step);
        }
        return history;
    }

    @Test
    void theSameSeedGivesTheSameTokens() {
        SamplingOptions o = SamplingOptions.defaults().withTemperature(1.5).withTopK(100).withTopP(0.95)
                .withRepeatPenalty(1.1).withFrequencyPenalty(0.1).withSeed(42);
        assertArrayEquals(generate(o, 9, 300), generate(o, 9, 300));
        assertNotEquals(Arrays.toString(generate(o, 9, 300)), Arrays.toString(generate(o.withSeed(43), 9, 300)));
        SamplingOptions wide = o.withTopK(0).withTopP(0.9).withMinP(0.01);
        assertArrayEquals(generate(wide, 9, 300), generate(wide, 9, 300));
    }

    @Test
    void aRandomSeedIsReportedAndRepeatable() {
        Sampler random = new Sampler(SamplingOptions.defaults(), 10);
        Sampler other = new Sampler(SamplingOptions.defaults(), 10);
        assertNotEquals(random.seed(), other.seed()); // 2^-64 chance of a false failure
        SamplingOptions o = SamplingOptions.defaults().withTemperature(2).withTopK(0).withTopP(1);
        Sampler first = new Sampler(o, 10);
        Sampler again = new Sampler(o.withSeed(first.seed()), 10);
        float[] flat = new float[10];
        for (int i = 0; i < 100; i++) assertEquals(first.sample(flat.clone(), NONE, 0), again.sample(flat.clone(), NONE, 0));
    }

    @Test
    void seedStreamIsFixed() {
        // SplitMix64 (Steele, Lea, Flood 2014) from state 0: its published first outputs
        SplitMix64 r = new SplitMix64(0);
        assertEquals(0xE220A8397B1DCDAFL, r.nextLong());
        assertEquals(0x6E789E6AA1B965F4L, r.nextLong());
        assertEquals(0x06C45D188009454FL, r.nextLong());
    }

    @Test
    void badOptionsAreRejectedAtConstruction() {
        InvalidInputException e = assertThrows(InvalidInputException.class,
                () -> new Sampler(SamplingOptions.defaults().withTopP(1.5), 10));
        assertEquals("option top_p must be in [0, 1], got 1.5", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Sampler(SamplingOptions.defaults(), 0));
    }
}
