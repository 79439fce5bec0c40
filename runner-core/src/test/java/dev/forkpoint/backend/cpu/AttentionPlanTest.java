package dev.forkpoint.backend.cpu;

import dev.forkpoint.kvcache.KvElementType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link AttentionPlan}: which calls the block-split path makes. Four decode rows forked from one prefix read each of
 * the prefix's full blocks in one call for all four (once per pass, not once per row), their own blocks alone; rows of
 * unrelated sequences share nothing; a prefill tile stays one whole call; every (row, block) is computed exactly once,
 * into its own partial record; the costliest calls come first.
 */
class AttentionPlanTest {
    private static final int PAGE = 16, BLOCK = CpuAttention.KEY_BLOCK;
    private final Arena arena = Arena.ofAuto();

    /** Keys over {@code pages} pages: the first {@code shared} of them {@code base}'s, the others fresh (one byte each: never read). */
    private CpuAttention.Keys keys(CpuAttention.Keys base, int shared, int pages) {
        MemorySegment[] k = new MemorySegment[pages], v = new MemorySegment[pages];
        for (int p = 0; p < pages; p++) {
            k[p] = p < shared ? base.keys()[p] : arena.allocate(1);
            v[p] = p < shared ? base.values()[p] : arena.allocate(1);
        }
        return new CpuAttention.Keys(k, v, PAGE, KvElementType.F32);
    }

    private static int[] oneRowTiles(int tokens) {
        int[] starts = new int[tokens + 1];
        for (int t = 0; t <= tokens; t++) starts[t] = t;
        return starts;
    }

    /** (row, block) → how many tasks compute it, checking each task's records point at its rows' own blocks. */
    private static Map<List<Integer>, Integer> coverage(AttentionPlan plan) {
        Map<List<Integer>, Integer> seen = new HashMap<>();
        for (AttentionPlan.Task w : plan.tasks()) {
            if (w.whole()) continue;
            for (int m = 0; m < w.rows().length; m++) {
                int t = w.rows()[m];
                assertEquals(plan.firstBlock()[t] + w.b0(), w.records()[m], "row " + t + "'s record of block " + w.b0());
                for (int b = w.b0(); b < w.b1(); b++) seen.merge(List.of(t, b), 1, Integer::sum);
            }
        }
        return seen;
    }

    @Test
    void fourForkedDecodeRowsReadEachFullPrefixBlockInOneCall() {
        int prefix = 2000, own = 100;                      // 2,000 / 16 = 125 shared pages: blocks 0 … 14 full and shared
        int pages = (prefix + own + PAGE - 1) / PAGE;
        CpuAttention.Keys base = keys(null, 0, pages);
        CpuAttention.Keys[] rows = new CpuAttention.Keys[4];
        int[] length = new int[4];
        for (int t = 0; t < 4; t++) {
            rows[t] = keys(base, prefix / PAGE, pages);
            length[t] = prefix + own - t;                  // different lengths, all in block 16
        }
        assertTrue(AttentionPlan.sharesPages(rows, length, oneRowTiles(4)));
        AttentionPlan plan = AttentionPlan.of(rows, length, oneRowTiles(4), 2);
        int sharedCalls = 0;
        for (AttentionPlan.Task w : plan.tasks()) {
            if (w.rows().length > 1) {
                sharedCalls++;
                assertEquals(4, w.rows().length, "all four rows in the call of block " + w.b0());
                assertEquals(w.b0() + 1, w.b1());
                assertTrue((w.b0() + 1) * BLOCK <= prefix, "block " + w.b0() + " lies in the prefix");
            }
        }
        assertEquals(prefix / BLOCK, sharedCalls, "each of the 15 full prefix blocks: one call");
        Map<List<Integer>, Integer> seen = coverage(plan);
        for (int t = 0; t < 4; t++) {
            for (int blk = 0; blk < AttentionPlan.blocks(length[t]); blk++) assertEquals(1, seen.get(List.of(t, blk)), "row " + t + " block " + blk);
        }
        assertEquals(4 * 17, seen.size());
        assertEquals(4 * 17, plan.records());
        for (int i = 1; i < plan.tasks().size(); i++) assertTrue(plan.tasks().get(i - 1).cost() >= plan.tasks().get(i).cost(), "costliest first");
    }

    @Test
    void unrelatedSequencesShareNoCallAndAPrefillTileStaysWhole() {
        CpuAttention.Keys a = keys(null, 0, 40), b = keys(null, 0, 40), forkOfA = keys(a, 33, 40);   // fork shares 528 positions
        assertFalse(AttentionPlan.sharesPages(new CpuAttention.Keys[] {a, b}, new int[] {600, 600}, oneRowTiles(2)));
        // a, b, the fork as decode rows; then a prefill chunk of the fork: 3 rows at consecutive positions (one tile)
        CpuAttention.Keys[] rows = {a, b, forkOfA, forkOfA, forkOfA, forkOfA};
        int[] length = {600, 620, 610, 600, 601, 602};
        int[] tiles = {0, 1, 2, 3, 6};
        assertTrue(AttentionPlan.sharesPages(rows, length, tiles));
        AttentionPlan plan = AttentionPlan.of(rows, length, tiles, 2);
        AttentionPlan.Task whole = null;
        for (AttentionPlan.Task w : plan.tasks()) {
            if (w.whole()) {
                assertNull(whole, "one whole tile");
                whole = w;
            } else if (w.rows().length > 1) {
                assertEquals(List.of(0, 2), List.of(w.rows()[0], w.rows()[1]), "only a and its fork share block " + w.b0());
                assertTrue(w.b0() < 4, "the fork shares blocks 0 … 3 (528 positions) with a");
            }
        }
        assertEquals(List.of(3, 4, 5), java.util.Arrays.stream(whole.rows()).boxed().toList());
        assertEquals(0, whole.b0());
        assertEquals(5, whole.b1());
        assertFalse(plan.split()[3]);
        Map<List<Integer>, Integer> seen = coverage(plan);
        for (int t = 0; t < 3; t++) {
            for (int blk = 0; blk < AttentionPlan.blocks(length[t]); blk++) assertEquals(1, seen.get(List.of(t, blk)), "row " + t + " block " + blk);
        }
        assertEquals(3 * 5, seen.size());
    }
}
