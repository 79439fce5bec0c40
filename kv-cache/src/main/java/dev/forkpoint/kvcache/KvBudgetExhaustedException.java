package dev.forkpoint.kvcache;

/** The pool has fewer free pages than a step needs, even after evicting every unlocked cached leaf. */
public final class KvBudgetExhaustedException extends RuntimeException {
    private final int pagesNeeded;
    private final int pagesFree;

    KvBudgetExhaustedException(int pagesNeeded, int pagesFree, int totalPages, long budgetBytes, long pageBytes) {
        super("kv cache budget exhausted: need " + pagesNeeded + " pages, " + pagesFree + " of " + totalPages
                + " free after eviction (budget " + budgetBytes + " bytes, " + pageBytes + " bytes per page)");
        this.pagesNeeded = pagesNeeded;
        this.pagesFree = pagesFree;
    }

    public int pagesNeeded() {
        return pagesNeeded;
    }

    public int pagesFree() {
        return pagesFree;
    }
}
