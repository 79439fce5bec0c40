package dev.forkpoint.kvcache;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fixed budget of off-heap memory cut into KV pages, with a free list and a reference count per page.
 *
 * <h2>Byte layout</h2>
 * Memory is committed lazily, in chunks of {@code pagesPerChunk} consecutive pages (about {@link #CHUNK_TARGET_BYTES},
 * at least one page), each a 64-byte-aligned segment of one {@link Arena#ofShared() shared} arena, allocated (and so
 * zero-filled, i.e. touched) only when one of its pages is first handed out: a pool costs nothing for the part of its
 * budget it has never used, and never more than the budget ({@link #allocatedBytes()} ≤ {@link #capacityBytes()} ≤
 * budget). Page {@code p} lives in chunk {@code p / pagesPerChunk} at {@code (p % pagesPerChunk) × pageBytes}. Inside a
 * page the order is layer, then kind (K before V), then slot (position within the page), then element:
 * <pre>
 *   offset(p, slot, layer, kind) = base(p) + ((2·layer + kind)·P + slot)·rowBytes
 *   rowBytes  = kvDim / B · blockBytes              (F32: B = 1, 4 bytes; F16: B = 1, 2 bytes;
 *                                                    Q8_0: B = 32, 34 bytes; Q4_0: B = 32, 18 bytes; native order)
 *   pageBytes = layers · 2 · P · rowBytes
 * </pre>
 * (a row's bytes: {@link KvElementType}, {@link KvRowCodec}), so each (page, layer, kind) is one contiguous slab of
 * {@code P} rows ({@link #slab}); an attention kernel
 * walks a sequence's page table and reads one slab per page. Position {@code t} of a sequence lives in the page at
 * table index {@code t / P}, slot {@code t % P}.
 *
 * <h2>Why P = 16 ({@link KvLayout#DEFAULT_PAGE_TOKENS})</h2>
 * <ul>
 * <li>Copy-on-write: a sequence that continues from a shared, partially filled page copies at most P−1 positions
 *     once per fork (16 × 128 KiB = 2 MiB for a 32-layer, kvDim 1024, F16 model: well under a millisecond).</li>
 * <li>Metadata: the radix tree keeps one int page id per P tokens next to one int token id per token, so
 *     4 + 4/P = 4.25 bytes per cached token; P = 1 would cost 8 B/token, and larger P saves at most 0.25 B.</li>
 * <li>Fragmentation: every leaf wastes on average P/2 slots; at 16 that is a few positions per cached branch.</li>
 * <li>Kernels: a slab is P·kvDim contiguous elements (16 KiB–64 KiB for common shapes), long enough to stream.</li>
 * </ul>
 * Prefix reuse stays token-exact at any P: edges split at any token and share the boundary page.
 *
 * <h2>Invariants</h2>
 * <ol>
 * <li>free pages + used pages = totalPages; a page is on the free list exactly when its reference count is 0.</li>
 * <li>A page's reference count equals the number of its holders: radix-tree nodes plus sequences (page tables).</li>
 * <li>Used bytes = used pages × pageBytes ≤ capacity bytes ≤ budget.</li>
 * </ol>
 * Reference counting and allocation are thread-safe; element reads and writes are plain memory accesses (a page is
 * written only by its sole holder, see {@link SequenceKv}).
 */
public final class PagePool implements AutoCloseable {
    private static final int[] NO_PAGES = new int[0];
    /** The size a lazily allocated chunk of pages aims at (a chunk holds at least one page). */
    public static final long CHUNK_TARGET_BYTES = 4L << 20;

    private final KvLayout layout;
    private final long budgetBytes;
    private final long pageBytes;
    private final int totalPages;
    private final int pagesPerChunk;
    private final Arena arena;
    /** Chunk c holds pages [c·pagesPerChunk, (c+1)·pagesPerChunk); null until first needed. Written under the lock. */
    private final MemorySegment[] chunks;
    private long allocatedBytes;
    private final int[] refCounts;
    private final int[] freeStack;
    private int freeCount;
    private volatile PageReclaimer reclaimer;
    private final AtomicLong nextSequenceId = new AtomicLong(1);

    /** A pool of {@code floor(budgetBytes / pageBytes)} pages. */
    public PagePool(KvLayout layout, long budgetBytes) {
        if (layout == null) throw new IllegalArgumentException("kv pool: layout is missing");
        this.layout = layout;
        this.budgetBytes = budgetBytes;
        this.pageBytes = layout.pageBytes();
        long pages = budgetBytes / pageBytes;
        if (pages < 1) {
            throw new IllegalArgumentException("kv cache budget of " + budgetBytes + " bytes is smaller than one page ("
                    + pageBytes + " bytes = " + layout.pageTokens() + " positions × " + layout.layers() + " layers × K,V × "
                    + layout.kvDim() + " × " + layout.elementType() + ")");
        }
        if (pages > Integer.MAX_VALUE - 8) pages = Integer.MAX_VALUE - 8;
        this.totalPages = (int) pages;
        this.pagesPerChunk = (int) Math.max(1, Math.min(totalPages, CHUNK_TARGET_BYTES / pageBytes));
        this.arena = Arena.ofShared();
        this.chunks = new MemorySegment[(totalPages + pagesPerChunk - 1) / pagesPerChunk];
        this.refCounts = new int[totalPages];
        this.freeStack = new int[totalPages];
        for (int i = 0; i < totalPages; i++) freeStack[i] = totalPages - 1 - i; // page 0 is handed out first
        this.freeCount = totalPages;
    }

    public KvLayout layout() {
        return layout;
    }

    public long budgetBytes() {
        return budgetBytes;
    }

    public long pageBytes() {
        return pageBytes;
    }

    public int totalPages() {
        return totalPages;
    }

    /** The most off-heap bytes this pool can ever hold: totalPages × pageBytes (≤ budget). */
    public long capacityBytes() {
        return totalPages * pageBytes;
    }

    /** Off-heap bytes allocated so far (whole chunks, only once a page in them was handed out; ≤ capacity). */
    public synchronized long allocatedBytes() {
        return allocatedBytes;
    }

    public synchronized int freePages() {
        return freeCount;
    }

    public synchronized int usedPages() {
        return totalPages - freeCount;
    }

    /** Bytes of pages currently held by a tree node or a sequence. */
    public long usedBytes() {
        return usedPages() * pageBytes;
    }

    /** A new, empty sequence on this pool. */
    public SequenceKv newSequence() {
        return new SequenceKv(this, nextSequenceId.getAndIncrement(), NO_PAGES, 0);
    }

    /**
     * The contiguous slab of {@code pageTokens} stored rows of (page, layer, kind), for kernels. Only the sole
     * holder of a page may write into it.
     */
    public MemorySegment slab(int page, int layer, KvKind kind) {
        checkPage(page);
        checkLayer(layer);
        return chunk(page).asSlice(base(page) + layout.offsetInPage(0, layer, kind), layout.slabBytes());
    }

    /** Releases the off-heap memory; every later access fails. */
    @Override
    public void close() {
        arena.close();
    }

    // ---- package-private: used by SequenceKv and RadixCache ----

    long nextSequenceId() {
        return nextSequenceId.getAndIncrement();
    }

    void setReclaimer(PageReclaimer reclaimer) {
        if (this.reclaimer != null && reclaimer != null) {
            throw new IllegalStateException("kv pool already serves a radix cache");
        }
        this.reclaimer = reclaimer;
    }

    /**
     * {@code n} fresh pages with reference count 1. When too few are free, asks the reclaimer (outside this lock) to
     * evict; throws {@link KvBudgetExhaustedException} when that could not help. All or nothing.
     */
    int[] allocate(int n) {
        if (n < 0) throw new IllegalArgumentException("page count " + n);
        if (n == 0) return NO_PAGES;
        int[] got = tryAllocate(n);
        if (got != null) return got;
        PageReclaimer r = reclaimer;
        if (r != null) {
            r.reclaim(n);
            got = tryAllocate(n);
            if (got != null) return got;
        }
        throw new KvBudgetExhaustedException(n, freePages(), totalPages, budgetBytes, pageBytes);
    }

    private synchronized int[] tryAllocate(int n) {
        if (freeCount < n) return null;
        int[] pages = new int[n];
        for (int i = 0; i < n; i++) {
            int p = freeStack[freeCount - 1];
            ensureChunk(p);   // may throw OutOfMemoryError: nothing taken for this page yet
            freeCount--;
            refCounts[p] = 1;
            pages[i] = p;
        }
        return pages;
    }

    /** Allocates the chunk of {@code page} if it is not there yet (caller holds the lock). */
    private void ensureChunk(int page) {
        int c = page / pagesPerChunk;
        if (chunks[c] != null) return;
        int pagesInChunk = Math.min(pagesPerChunk, totalPages - c * pagesPerChunk);
        long bytes = pagesInChunk * pageBytes;
        chunks[c] = arena.allocate(bytes, 64);
        allocatedBytes += bytes;
    }

    private MemorySegment chunk(int page) {
        MemorySegment c = chunks[page / pagesPerChunk];
        if (c == null) throw new IllegalStateException("kv pool: page " + page + " was never allocated");
        return c;
    }

    private long base(int page) {
        return (page % pagesPerChunk) * pageBytes;
    }

    synchronized void retain(int page) {
        checkPage(page);
        if (refCounts[page] <= 0) throw new IllegalStateException("kv pool: retain of free page " + page);
        refCounts[page]++;
    }

    synchronized void retain(int[] pages, int from, int to) {
        for (int i = from; i < to; i++) retain(pages[i]);
    }

    synchronized void release(int page) {
        checkPage(page);
        int c = refCounts[page];
        if (c <= 0) throw new IllegalStateException("kv pool: release of free page " + page);
        refCounts[page] = c - 1;
        if (c == 1) freeStack[freeCount++] = page;
    }

    synchronized void release(int[] pages, int from, int to) {
        for (int i = from; i < to; i++) release(pages[i]);
    }

    synchronized int refCount(int page) {
        checkPage(page);
        return refCounts[page];
    }

    /** Copies slots [0, slots) of every (layer, kind) slab from page {@code src} to page {@code dst}. */
    void copySlots(int src, int dst, int slots) {
        long bytes = slots * layout.rowBytes();
        if (bytes == 0) return;
        for (int layer = 0; layer < layout.layers(); layer++) {
            for (KvKind kind : KvKind.values()) {
                long off = layout.offsetInPage(0, layer, kind);
                MemorySegment.copy(chunk(src), base(src) + off, chunk(dst), base(dst) + off, bytes);
            }
        }
    }

    /** Reads kvDim elements of (page, slot, layer, kind) into {@code out[outOffset..]} as floats (dequantised if need be). */
    void read(int page, int slot, int layer, KvKind kind, float[] out, int outOffset) {
        KvRowCodec.load(layout.elementType(), chunk(page), base(page) + layout.offsetInPage(slot, layer, kind), out, outOffset, layout.kvDim());
    }

    /**
     * Writes kvDim elements from {@code values[offset..]} to (page, slot, layer, kind), rounded to the element type
     * ({@link KvRowCodec}: F16 rounding, or Q8_0 / Q4_0 quantisation of each block of the row).
     */
    void write(int page, int slot, int layer, KvKind kind, float[] values, int offset) {
        KvRowCodec.store(layout.elementType(), values, offset, layout.kvDim(), chunk(page), base(page) + layout.offsetInPage(slot, layer, kind));
    }

    void checkLayer(int layer) {
        if (layer < 0 || layer >= layout.layers()) {
            throw new IndexOutOfBoundsException("layer " + layer + " outside [0, " + layout.layers() + ")");
        }
    }

    private void checkPage(int page) {
        if (page < 0 || page >= totalPages) {
            throw new IndexOutOfBoundsException("page " + page + " outside [0, " + totalPages + ")");
        }
    }
}
