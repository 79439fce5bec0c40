package dev.forkpoint.engine;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The thinking budget's tracker: which tokens it forces, fed decoded pieces as a generation produces them. */
class ThinkingBudgetTest {
    private static final int[] CLOSE = {901, 902, 903};

    /** Runs the tracker over {@code pieces} (one per token); returns the forced ids, -1 where the model sampled. */
    private static List<Integer> run(ThinkingBudget budget, String... pieces) {
        ThinkingBudget.Tracker t = new ThinkingBudget.Tracker(budget);
        List<Integer> out = new ArrayList<>();
        for (String p : pieces) {
            int forced = t.forcedToken();
            out.add(forced);
            t.generated(forced >= 0 ? "<forced>" : p);
        }
        return out;
    }

    private static ThinkingBudget budget(int tokens, boolean inside) {
        return new ThinkingBudget(tokens, "<think>", "</think>", CLOSE, inside);
    }

    @Test
    void closesTheBlockAtTheBudget() {
        // "<th" "ink>" are 2 tokens inside, "a" "b" 2 more: the budget of 4 is spent, the next 3 tokens are the tag's
        assertEquals(List.of(-1, -1, -1, -1, 901, 902, 903, -1, -1),
                run(budget(4, false), "<th", "ink>", "a", "b", "c", "d", "e", "Answer", "."));
    }

    @Test
    void aBlockClosedInTimeOrNeverOpenedIsNotTouched() {
        assertEquals(List.of(-1, -1, -1, -1, -1, -1), run(budget(4, false), "<think>", "a", "</th", "ink>", "x", "y"));
        assertEquals(List.of(-1, -1, -1, -1, -1, -1), run(budget(2, false), " Just", " an", " answer", " a", " b", " c"));
    }

    @Test
    void promptOpenedBlockCountsFromTheFirstToken() {
        assertEquals(List.of(-1, -1, 901, 902, 903, -1), run(budget(2, true), "a", "b", "c", "d", "e", "Answer"));
    }

    @Test
    void badBudgetsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> budget(0, false));
        assertThrows(IllegalArgumentException.class, () -> new ThinkingBudget(5, "<think>", "</think>", new int[0], false));
    }
}
