package dev.forkpoint.sampling;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each filter against a hand-computed five-token distribution. Token probabilities at temperature 1 are
 * P = [0.05, 0.4, 0.1, 0.25, 0.2] (ids 0..4), so by rank: id1 0.4, id3 0.25, id4 0.2, id2 0.1, id0 0.05.
 * The expected sets below are worked out by hand from P; the expected probabilities are P (or P^(1/T)) over that
 * set, renormalised.
 */
class SamplerFilterTest {
    static final double[] P = {0.05, 0.4, 0.1, 0.25, 0.2};
    static final int DRAWS = 20_000;

    static float[] logits() {
        float[] l = new float[P.length];
        for (int i = 0; i < P.length; i++) l[i] = (float) (Math.log(P[i]) + 3.0); // shift: softmax ignores it
        return l;
    }

    static SamplingOptions plain(double temperature) {
        return SamplingOptions.defaults().withTemperature(temperature).withTopK(0).withTopP(1).withMinP(0).withSeed(7);
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("top_k 3", plain(1).withTopK(3), new int[]{1, 3, 4}),
                Arguments.of("top_k 1", plain(1).withTopK(1), new int[]{1}),
                Arguments.of("top_k = vocab is disabled", plain(1).withTopK(5), new int[]{0, 1, 2, 3, 4}),
                Arguments.of("top_k > vocab is disabled", plain(1).withTopK(40), new int[]{0, 1, 2, 3, 4}),
                Arguments.of("no filters", plain(1), new int[]{0, 1, 2, 3, 4}),
                // cumulative 0.4, 0.65 ≥ 0.6
                Arguments.of("top_p 0.6", plain(1).withTopP(0.6), new int[]{1, 3}),
                // cumulative 0.4, 0.65, 0.85 ≥ 0.7
                Arguments.of("top_p 0.7", plain(1).withTopP(0.7), new int[]{1, 3, 4}),
                Arguments.of("top_p 0.99", plain(1).withTopP(0.99), new int[]{0, 1, 2, 3, 4}),
                Arguments.of("top_p 0 keeps one", plain(1).withTopP(0), new int[]{1}),
                // top_p sees top_k's renormalised mass: 0.4/0.65 = 0.615 ≥ 0.6 (without renormalising: two)
                Arguments.of("top_k 2 then top_p 0.6", plain(1).withTopK(2).withTopP(0.6), new int[]{1}),
                // threshold 0.3 × 0.4 = 0.12
                Arguments.of("min_p 0.3", plain(1).withMinP(0.3), new int[]{1, 3, 4}),
                // threshold 0.55 × 0.4 = 0.22
                Arguments.of("min_p 0.55", plain(1).withMinP(0.55), new int[]{1, 3}),
                // threshold 0.08
                Arguments.of("min_p 0.2", plain(1).withMinP(0.2), new int[]{1, 2, 3, 4}),
                Arguments.of("min_p 1 keeps the max", plain(1).withMinP(1), new int[]{1}),
                // min_p cuts deeper than top_p (top_p alone would keep 4): min_p's set
                Arguments.of("top_p 0.9, min_p 0.55", plain(1).withTopP(0.9).withMinP(0.55), new int[]{1, 3}),
                // top_p cuts deeper than min_p
                Arguments.of("top_p 0.5, min_p 0.2", plain(1).withTopP(0.5).withMinP(0.2), new int[]{1, 3}),
                Arguments.of("temperature 0.5", plain(0.5), new int[]{0, 1, 2, 3, 4}),
                Arguments.of("temperature 2, top_k 3", plain(2).withTopK(3), new int[]{1, 3, 4}),
                // top 4 renormalised over 0.95: cumulative 0.421, 0.684, 0.895, 1 → top_p 0.9 keeps 4;
                // min_p 0.3 (threshold 0.12) then drops id2 (0.1)
                Arguments.of("top_k 4, top_p 0.9, min_p 0.3, temperature 0.7",
                        plain(0.7).withTopK(4).withTopP(0.9).withMinP(0.3), new int[]{1, 3, 4}),
                // top_k 40 ≥ 5 is off; top_p 0.9: cumulative 0.4, 0.65, 0.85, 0.95 → four; temperature 0.8
                Arguments.of("Ollama defaults", SamplingOptions.defaults().withSeed(3), new int[]{1, 2, 3, 4}));
    }

    static double[] expected(SamplingOptions o, int[] kept) {
        double[] e = new double[P.length];
        double sum = 0;
        for (int id : kept) sum += e[id] = Math.pow(P[id], 1 / o.temperature());
        for (int id : kept) e[id] /= sum;
        return e;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void distributionMatchesHandComputed(String name, SamplingOptions o, int[] kept) {
        double[] p = new Sampler(o, P.length).probabilities(logits());
        assertArrayEquals(expected(o, kept), p, 1e-6, name);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void drawsFollowTheRenormalisedDistribution(String name, SamplingOptions o, int[] kept) {
        double[] e = expected(o, kept);
        Sampler s = new Sampler(o, P.length);
        int[] counts = new int[P.length];
        for (int i = 0; i < DRAWS; i++) counts[s.sample(logits(), new int[0], 0)]++;
        for (int id = 0; id < P.length; id++) {
            if (e[id] == 0) {
                assertEquals(0, counts[id], name + ": id " + id + " is filtered out but was drawn");
            } else {
                double mean = DRAWS * e[id], sigma = Math.sqrt(DRAWS * e[id] * (1 - e[id]));
                assertTrue(Math.abs(counts[id] - mean) <= 5 * sigma + 1,
                        name + ": id " + id + " drawn " + counts[id] + " times, expected " + mean + " ± " + 5 * sigma);
            }
        }
    }
}
