package dev.forkpoint.kvcache;

/** Frees pool pages on demand (the radix cache evicting unlocked leaves). Called without the pool's lock held. */
interface PageReclaimer {
    /** Tries to make at least {@code freePages} pages free; true when it succeeded. */
    boolean reclaim(int freePages);
}
