package dev.forkpoint.engine;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** The pass-cost fit against costs made up here: exact lines, a change of machine load, and the unknown start. */
class StepCostsTest {
    @Property(tries = 200)
    void anExactLineIsRecoveredAndSizesTheChunk(@ForAll @IntRange(min = 1, max = 200) int fixedMs,
                                                 @ForAll @IntRange(min = 1, max = 50) int perTokenMs,
                                                 @ForAll @IntRange(min = 1, max = 16) int decodeRows) {
        StepCosts c = new StepCosts();
        for (int i = 0; i < 40; i++) {
            int rows = 1 + (i * 7) % 40;
            c.record(rows, (fixedMs + (long) perTokenMs * rows) * 1_000_000L);
        }
        assertEquals(perTokenMs * 1e6, c.perTokenNanos(), 1e-3 * perTokenMs * 1e6);
        assertEquals((fixedMs + perTokenMs * decodeRows) * 1e6, c.estimate(decodeRows), 1e-3 * (fixedMs + perTokenMs * decodeRows) * 1e6);
        long target = (fixedMs + (long) perTokenMs * decodeRows) * 1_000_000L * 3;
        double room = target - (fixedMs + (double) perTokenMs * decodeRows) * 1e6;
        int expected = (int) Math.max(StepCosts.MIN_CHUNK, Math.floor(room / (perTokenMs * 1e6)));
        assertTrue(Math.abs(c.tokensWithin(target, decodeRows) - expected) <= 1, c.tokensWithin(target, decodeRows) + " vs " + expected);
    }

    @Test
    void unknownCostsGiveTheFirstChunkAndASingleSizeTeachesNoSlope() {
        StepCosts c = new StepCosts();
        assertEquals(StepCosts.FIRST_CHUNK, c.tokensWithin(1_000_000, 1));
        assertEquals(0, c.estimate(4));
        for (int i = 0; i < 10; i++) c.record(4, 40_000_000);
        assertTrue(Double.isNaN(c.perTokenNanos()));
        assertEquals(StepCosts.FIRST_CHUNK, c.tokensWithin(1_000_000, 4));
        assertEquals(10_000_000, c.estimate(1), 1);   // the mean cost per row while the slope is unknown
    }

    @Test
    void aSlowerMachineShowsWithinAFewDozenPasses() {
        StepCosts c = new StepCosts();
        for (int i = 0; i < 100; i++) c.record(1 + i % 20, (10 + (1 + i % 20)) * 1_000_000L);         // 10 ms + 1 ms a row
        assertEquals(1e6, c.perTokenNanos(), 1e3);
        for (int i = 0; i < 100; i++) c.record(1 + i % 20, (10 + 4L * (1 + i % 20)) * 1_000_000L);   // now 4 ms a row
        assertEquals(4e6, c.perTokenNanos(), 0.05e6);
    }

    @Test
    void theChunkIsNeverBelowTheMinimum() {
        StepCosts c = new StepCosts();
        for (int i = 0; i < 30; i++) c.record(1 + i % 10, (100 + 10L * (1 + i % 10)) * 1_000_000L);
        assertEquals(StepCosts.MIN_CHUNK, c.tokensWithin(50_000_000, 4), "the decode pass alone is over the target");
    }
}
