package dev.forkpoint.sampling;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sampler with a token mask (structured outputs): applied first, never left, neutral where it allows the pick. */
class MaskedSamplingTest {
    static final int VOCAB = 1000;

    static long[] randomMask(SplittableRandom r, double density) {
        long[] m = new long[(VOCAB + 63) / 64];
        for (int i = 0; i < VOCAB; i++) if (r.nextDouble() < density) m[i >>> 6] |= 1L << i;
        return m;
    }

    static boolean allowed(long[] m, int id) { return (m[id >>> 6] & (1L << id)) != 0; }

    static float[] randomLogits(SplittableRandom r) {
        float[] l = new float[VOCAB];
        for (int i = 0; i < VOCAB; i++) l[i] = (float) (r.nextGaussian() * 3);
        return l;
    }

    @Test
    void greedyPicksTheBestAllowedTokenAndAMaskHoldingTheArgmaxChangesNothing() {
        SplittableRandom r = new SplittableRandom(7);
        for (int trial = 0; trial < 500; trial++) {
            float[] logits = randomLogits(r);
            long[] mask = randomMask(r, trial % 2 == 0 ? 0.01 : 0.5);
            mask[0] |= 1;   // never empty
            int best = -1;
            for (int i = 0; i < VOCAB; i++) if (allowed(mask, i) && (best < 0 || logits[i] > logits[best])) best = i;
            Sampler greedy = new Sampler(SamplingOptions.greedy(), VOCAB);
            assertEquals(best, greedy.sample(logits.clone(), new int[0], 0, mask));
            int argmax = greedy.sample(logits.clone(), new int[0], 0);
            mask[argmax >>> 6] |= 1L << argmax;
            assertEquals(argmax, greedy.sample(logits.clone(), new int[0], 0, mask), "a mask that allows the greedy pick must not change it");
        }
    }

    @Test
    void drawsNeverLeaveTheMask() {
        SplittableRandom r = new SplittableRandom(11);
        SamplingOptions[] options = {SamplingOptions.defaults(), SamplingOptions.defaults().withTopK(0).withTopP(1),
                SamplingOptions.defaults().withTopK(0).withTopP(0.5), SamplingOptions.defaults().withTopK(3).withMinP(0.2).withTemperature(2),
                SamplingOptions.defaults().withRepeatPenalty(1.5).withPresencePenalty(2)};
        for (int trial = 0; trial < 2000; trial++) {
            SamplingOptions o = options[trial % options.length].withSeed(trial);
            float[] logits = randomLogits(r);
            long[] mask = randomMask(r, trial % 3 == 0 ? 0.002 : 0.3);
            mask[(trial * 31) % VOCAB >>> 6] |= 1L << ((trial * 31) % VOCAB);
            int[] history = {1, 2, 3, (trial * 31) % VOCAB};
            int id = new Sampler(o, VOCAB).sample(logits, history, history.length, mask);
            assertTrue(allowed(mask, id), "drew " + id + " outside the mask with " + o);
        }
    }
}
