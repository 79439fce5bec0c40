package dev.forkpoint.engine;

/**
 * A cap on the tokens a reply spends in its thinking block: once {@code tokens} have been generated inside the block
 * (its opening tag included) and it is still open, the engine writes {@code closeIds} itself (the closing tag, as the
 * model's template spells it) instead of sampling, and the model goes on to its answer. A reply that does not open the
 * block (past leading whitespace) is not limited.
 *
 * @param tokens       the most tokens inside the block, ≥ 1
 * @param open         the opening tag ({@code <think>})
 * @param close        the closing tag ({@code </think>}): when the model writes it, the cap no longer applies
 * @param closeIds     the tokens written at the cap (e.g. the encoding of {@code "\n</think>\n\n"}), not empty
 * @param startsInside whether the prompt opened the block (the reply starts inside it)
 */
public record ThinkingBudget(int tokens, String open, String close, int[] closeIds, boolean startsInside) {
    public ThinkingBudget {
        if (tokens < 1) throw new IllegalArgumentException("a thinking budget is at least 1 token, got " + tokens);
        if (open == null || open.isEmpty() || close == null || close.isEmpty()) throw new IllegalArgumentException("tags must not be empty");
        if (closeIds == null || closeIds.length == 0) throw new IllegalArgumentException("closeIds must not be empty");
        closeIds = closeIds.clone();
    }

    /** Follows one generation's output and says when to close the block. Not thread-safe: one per generation. */
    static final class Tracker {
        private enum State { UNDECIDED, INSIDE, FORCING, DONE }

        private final ThinkingBudget budget;
        private State state;
        private final StringBuilder seen = new StringBuilder();   // UNDECIDED: the output so far; INSIDE: its tail
        private int inside;                                        // tokens generated inside the block
        private int forced;                                        // closeIds written so far

        Tracker(ThinkingBudget budget) {
            this.budget = budget;
            this.state = budget.startsInside() ? State.INSIDE : State.UNDECIDED;
        }

        /** The token to write instead of sampling, or -1 to sample. */
        int forcedToken() {
            return state == State.FORCING ? budget.closeIds()[forced] : -1;
        }

        /** A token was generated (sampled or forced) and decoded to {@code raw}. */
        void generated(String raw) {
            switch (state) {
                case UNDECIDED -> {
                    inside++;
                    seen.append(raw);
                    String t = seen.toString().stripLeading();
                    if (t.startsWith(budget.open())) {
                        state = State.INSIDE;
                        seen.setLength(0);
                        seen.append(t.substring(budget.open().length()));
                        closedOrCapped();
                    } else if (!t.isEmpty() && !budget.open().startsWith(t)) {
                        state = State.DONE;
                    }
                }
                case INSIDE -> {
                    inside++;
                    seen.append(raw);
                    closedOrCapped();
                }
                case FORCING -> {
                    if (++forced == budget.closeIds().length) state = State.DONE;
                }
                case DONE -> { }
            }
        }

        private void closedOrCapped() {
            if (seen.indexOf(budget.close()) >= 0) {
                state = State.DONE;
                return;
            }
            int keep = budget.close().length() - 1;   // enough to find a closing tag split across tokens
            if (seen.length() > keep) seen.delete(0, seen.length() - keep);
            if (inside >= budget.tokens()) state = State.FORCING;
        }
    }
}
