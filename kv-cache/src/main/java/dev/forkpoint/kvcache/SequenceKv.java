package dev.forkpoint.kvcache;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One sequence's KV: a page table over a {@link PagePool} and a committed length, changed only through steps.
 *
 * <h2>Invariants</h2>
 * <ol>
 * <li>Outside a step the table holds exactly {@code ceil(length / P)} pages, each retained once by this sequence.</li>
 * <li>Positions [0, length) are committed and immutable: no write can reach them (they may be shared).</li>
 * <li>A step {@code begin(n)} reserves [length, length + n); only those positions may be written, and only into pages
 *     this sequence holds alone: a shared, partially filled last page is first copied (copy-on-write, the valid
 *     slots only). {@code commit()} adds the n positions to the length; {@code rollback()} restores the table and
 *     length exactly as they were before {@code begin}, releasing every page the step allocated.</li>
 * <li>Reads are allowed at [0, length + n) during a step (the step reads what it just wrote), [0, length) otherwise;
 *     any other offset throws {@link KvBoundsException} naming the sequence, the offset and the stored count.</li>
 * </ol>
 * Not thread-safe: one request drives a sequence. {@link #close()} releases its pages and its radix-tree lock.
 */
public final class SequenceKv implements AutoCloseable {
    private final PagePool pool;
    private final long id;
    private final int pageTokens;
    private int[] pages;
    private int pageCount;
    private int length;
    private int pending;
    private boolean inStep;
    private int stepFirstNewPage;
    private int cowIndex = -1;
    private int cowOriginal;
    private boolean closed;

    /** The radix node whose path this sequence keeps locked, and the cache that owns it (both null when unlocked). */
    RadixNode lockedNode;
    RadixCache lockOwner;

    /** Takes ownership of one reference to each of {@code pages} (already retained by the caller). */
    SequenceKv(PagePool pool, long id, int[] pages, int length) {
        this.pool = pool;
        this.id = id;
        this.pageTokens = pool.layout().pageTokens();
        if (pages.length != ceilDiv(length, pageTokens)) {
            throw new IllegalArgumentException(pages.length + " pages for " + length + " positions");
        }
        this.pages = pages.length == 0 ? new int[4] : pages;
        this.pageCount = pages.length;
        this.length = length;
    }

    public long id() {
        return id;
    }

    public PagePool pool() {
        return pool;
    }

    public KvLayout layout() {
        return pool.layout();
    }

    /** Committed positions. */
    public int length() {
        return length;
    }

    /** Readable positions: the committed length plus the open step's reservation. */
    public int stored() {
        return length + pending;
    }

    /** Positions reserved by the open step (0 when none). */
    public int pending() {
        return pending;
    }

    public boolean inStep() {
        return inStep;
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Opens a step that will write positions [length, length + n), allocating pages (evicting cached leaves if the
     * pool is full). All or nothing: on {@link KvBudgetExhaustedException} the sequence is unchanged.
     */
    public void begin(int n) {
        requireOpen();
        if (inStep) throw new IllegalStateException("sequence " + id + ": a step is already open");
        if (n < 1) throw new IllegalArgumentException("sequence " + id + ": step of " + n + " positions");
        if ((long) length + n > Integer.MAX_VALUE - pageTokens) {
            throw new IllegalArgumentException("sequence " + id + ": " + length + " + " + n + " positions overflow");
        }
        int needed = ceilDiv(length + n, pageTokens);
        int partial = length % pageTokens;
        boolean cow = partial != 0 && pool.refCount(pages[pageCount - 1]) > 1;
        int[] fresh = pool.allocate(needed - pageCount + (cow ? 1 : 0));
        int next = 0;
        if (cow) {
            cowIndex = pageCount - 1;
            cowOriginal = pages[cowIndex];
            pool.copySlots(cowOriginal, fresh[next], partial);
            pages[cowIndex] = fresh[next++];
        }
        stepFirstNewPage = pageCount;
        if (pages.length < needed) pages = Arrays.copyOf(pages, Math.max(needed, pages.length * 2));
        while (next < fresh.length) pages[pageCount++] = fresh[next++];
        pending = n;
        inStep = true;
    }

    /** Makes the open step's positions part of the committed length. */
    public void commit() {
        requireStep();
        length += pending;
        endStep();
        if (cowIndex >= 0) {
            pool.release(cowOriginal);
            cowIndex = -1;
        }
    }

    /** Returns to the last committed length and page table, releasing the pages the step allocated. */
    public void rollback() {
        requireStep();
        pool.release(pages, stepFirstNewPage, pageCount);
        pageCount = stepFirstNewPage;
        if (cowIndex >= 0) {
            pool.release(pages[cowIndex]);
            pages[cowIndex] = cowOriginal;
            cowIndex = -1;
        }
        endStep();
    }

    /** Drops positions [offset, length); offset beyond the stored length throws {@link KvBoundsException}. */
    public void truncate(int offset) {
        requireOpen();
        if (inStep) throw new IllegalStateException("sequence " + id + ": truncate during an open step");
        if (offset < 0 || offset > length) throw KvBoundsException.exceeds(id, offset, length);
        int keep = ceilDiv(offset, pageTokens);
        pool.release(pages, keep, pageCount);
        pageCount = keep;
        length = offset;
    }

    /** A new sequence sharing this one's committed positions (pages retained, copied on write). */
    public SequenceKv fork() {
        requireOpen();
        if (inStep) throw new IllegalStateException("sequence " + id + ": fork during an open step");
        int[] table = Arrays.copyOf(pages, pageCount);
        pool.retain(table, 0, table.length);
        return new SequenceKv(pool, pool.nextSequenceId(), table, length);
    }

    /** The K or V of one position and layer. */
    public float[] read(int position, int layer, KvKind kind) {
        float[] out = new float[pool.layout().kvDim()];
        read(position, layer, kind, out, 0);
        return out;
    }

    /** Reads kvDim floats of (position, layer, kind) into {@code out[offset..]}. */
    public void read(int position, int layer, KvKind kind, float[] out, int offset) {
        requireOpen();
        if (position < 0 || position >= stored()) throw KvBoundsException.exceeds(id, position, stored());
        pool.checkLayer(layer);
        pool.read(pages[position / pageTokens], position % pageTokens, layer, kind, out, offset);
    }

    /** Writes kvDim floats to (position, layer, kind); the position must be inside the open step. */
    public void write(int position, int layer, KvKind kind, float[] values) {
        write(position, layer, kind, values, 0);
    }

    public void write(int position, int layer, KvKind kind, float[] values, int offset) {
        requireOpen();
        if (position < length || position >= length + pending) {
            throw KvBoundsException.outsideStep(id, position, stored(), length, length + pending);
        }
        pool.checkLayer(layer);
        pool.write(pages[position / pageTokens], position % pageTokens, layer, kind, values, offset);
    }

    /** Pages in the table: ceil(stored() / P). */
    public int pageCount() {
        return pageCount;
    }

    /** The pool page id at table index {@code index} (holding positions [index·P, index·P + P)). */
    public int pageId(int index) {
        requireOpen();
        if (index < 0 || index >= pageCount) {
            throw new IndexOutOfBoundsException("sequence " + id + ": page index " + index + " outside [0, " + pageCount + ")");
        }
        return pages[index];
    }

    /**
     * The slab of table page {@code index} for (layer, kind): P stored rows ({@link KvLayout#rowBytes()} each), position t at slot t % P of index
     * t / P. A kernel may write through it only the open step's positions [length, length + pending): after
     * {@code begin} the pages holding them are this sequence's alone. Slots at or past {@link #stored()} are garbage,
     * and so are reserved positions the step has not written yet.
     */
    public MemorySegment pageSlab(int index, int layer, KvKind kind) {
        return pool.slab(pageId(index), layer, kind);
    }

    /** Rolls back an open step, releases every page and the radix-tree lock. Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        if (inStep) rollback();
        pool.release(pages, 0, pageCount);
        pageCount = 0;
        length = 0;
        closed = true;
        RadixCache owner = lockOwner;
        if (owner != null) owner.unlock(this);
    }

    // ---- package-private views for the radix cache and tests ----

    /** Page ids at table indices [from, to), copied. */
    int[] pages(int from, int to) {
        return Arrays.copyOfRange(pages, from, to);
    }

    /** Every page reference this sequence holds (the table and a page kept for rollback). */
    void forEachHeldPage(java.util.function.IntConsumer action) {
        for (int i = 0; i < pageCount; i++) action.accept(pages[i]);
        if (cowIndex >= 0) action.accept(cowOriginal);
    }

    private void endStep() {
        pending = 0;
        inStep = false;
    }

    private void requireOpen() {
        if (closed) throw new IllegalStateException("sequence " + id + " is closed");
    }

    private void requireStep() {
        requireOpen();
        if (!inStep) throw new IllegalStateException("sequence " + id + ": no open step");
    }

    static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }
}
