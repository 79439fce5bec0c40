package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * A Java emulation of the planned two-pass decomposition (f32) equals naive attention (the same f32 inputs computed
 * in double) within a relative error of 1e-5, for plans under every limit of interest. The error of a (head, row)
 * output is {@code ‖out − ref‖₂ / ‖ref‖₂}; for the synthetic shapes of {@link #smallLimitsAndOtherSimdWidths} (head
 * dims down to 1, where the softmax average of a few values can cancel to nearly zero and no f32 computation can be
 * relatively exact) the denominator is the norm of the weighted magnitudes {@code Σ p_k·|v_k|} instead.
 */
class SdpaEmulationPropertyTest {

    /** Multiply-adds one try may spend (keeps the property at a few seconds). */
    private static final long WORK_BUDGET = 4_000_000;
    private static final double TOLERANCE = 1e-5;

    @Property(tries = 150)
    void theTwoPassPlanIsAttention(@ForAll("limits") int limit, @ForAll @IntRange(min = 1, max = 16) int gqa,
                                   @ForAll @IntRange(min = 1, max = 8) int rows, @ForAll("headDims") int headDim,
                                   @ForAll @IntRange(min = 1, max = 131072) int wantedKeys,
                                   @ForAll("scales") float qScale, @ForAll long seed) {
        // the key length is cut to the work budget; small lengths (fewer keys than blocks) stay as drawn
        int keys = (int) Math.max(1, Math.min(wantedKeys, WORK_BUDGET / ((long) gqa * rows * headDim)));
        check(GpuLimits.apple(limit), new SdpaShape(gqa, rows, headDim, keys, 2), qScale, seed, false);
    }

    /** Head splits (a re-planned limit below the GQA group), other SIMD widths, small key tiles. */
    @Property(tries = 60)
    void smallLimitsAndOtherSimdWidths(@ForAll @IntRange(min = 8, max = 300) int limit,
                                       @ForAll("simdWidths") int simd, @ForAll @IntRange(min = 1, max = 16) int gqa,
                                       @ForAll @IntRange(min = 1, max = 8) int rows,
                                       @ForAll @IntRange(min = 1, max = 160) int headDim,
                                       @ForAll @IntRange(min = 1, max = 3000) int wantedKeys,
                                       @ForAll @IntRange(min = 2048, max = 32768) int memory, @ForAll long seed) {
        int keys = (int) Math.max(1, Math.min(wantedKeys, WORK_BUDGET / ((long) gqa * rows * headDim)));
        GpuLimits limits = new GpuLimits(Math.max(limit, simd), simd, memory);
        check(limits, new SdpaShape(gqa, rows, headDim, keys, 4), 1f, seed, true);
    }

    /** The FACTS §1 A shape on its 896 pipeline, at a length that uses many blocks. */
    @Test
    void theOllamaCrashShape() {
        check(GpuLimits.apple(896), new SdpaShape(8, 4, 256, 1500, 2), 2f, 42, false);
    }

    /** More blocks than keys: the empty blocks' neutral partials must not disturb the reduction. */
    @Test
    void fewerKeysThanBlocks() {
        for (int keys = 1; keys <= 40; keys++) {
            check(GpuLimits.apple(512), new SdpaShape(3, 2, 80, keys, 2), 3f, keys, false);
        }
    }

    private static void check(GpuLimits limits, SdpaShape shape, float qScale, long seed, boolean byMagnitudes) {
        SdpaPlan plan = SdpaPlanner.plan(limits, shape);
        PlanInvariants.check(plan);
        SplittableRandom random = new SplittableRandom(seed);
        float[][] q = randomRows(random, shape.pairs(), shape.headDim(), qScale);
        float[][] k = randomRows(random, shape.keyLength(), shape.headDim(), 1f);
        float[][] v = randomRows(random, shape.keyLength(), shape.headDim(), 1f);
        float scale = (float) (1 / Math.sqrt(shape.headDim()));

        float[][] got = SdpaEmulation.run(plan, q, k, v, scale);
        double[][] want = SdpaEmulation.naive(q, k, v, scale);
        double[][] magnitudes = byMagnitudes ? SdpaEmulation.naive(q, k, absolute(v), scale) : want;
        for (int pair = 0; pair < shape.pairs(); pair++) {
            double err = 0;
            double norm = 0;
            for (int e = 0; e < shape.headDim(); e++) {
                double d = got[pair][e] - want[pair][e];
                err += d * d;
                norm += magnitudes[pair][e] * magnitudes[pair][e];
            }
            double relative = Math.sqrt(err / norm);
            assertTrue(relative < TOLERANCE, "pair " + pair + ": relative error " + relative + " for " + shape
                    + " under " + limits);
        }
    }

    private static float[][] absolute(float[][] rows) {
        float[][] abs = new float[rows.length][];
        for (int i = 0; i < rows.length; i++) {
            abs[i] = rows[i].clone();
            for (int e = 0; e < abs[i].length; e++) {
                abs[i][e] = Math.abs(abs[i][e]);
            }
        }
        return abs;
    }

    private static float[][] randomRows(SplittableRandom random, int n, int dim, float scale) {
        float[][] rows = new float[n][dim];
        for (float[] row : rows) {
            for (int e = 0; e < dim; e++) {
                row[e] = (float) (random.nextDouble(-1, 1) * scale);
            }
        }
        return rows;
    }

    @Provide
    Arbitrary<Integer> limits() {
        return Arbitraries.of(1024, 896, 832, 640, 512);
    }

    @Provide
    Arbitrary<Integer> headDims() {
        return Arbitraries.of(64, 80, 96, 128, 160, 192, 224, 256);
    }

    @Provide
    Arbitrary<Float> scales() {
        return Arbitraries.of(0.5f, 1f, 4f);
    }

    @Provide
    Arbitrary<Integer> simdWidths() {
        return Arbitraries.of(8, 16, 32);
    }
}
