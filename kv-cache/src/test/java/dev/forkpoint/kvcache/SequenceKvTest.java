package dev.forkpoint.kvcache;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class SequenceKvTest {
    private static final KvLayout LAYOUT = new KvLayout(2, 3, KvElementType.F32, 16);

    private static int[] tokens(int n, int seed) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = (int) (KvOracle.mix(seed * 1000003L + i) & 0xFFFF);
        return t;
    }

    private static SequenceKv filled(PagePool pool, int[] tokens) {
        SequenceKv seq = pool.newSequence();
        seq.begin(tokens.length);
        KvOracle.writeAll(seq, tokens, 0, tokens.length);
        seq.commit();
        return seq;
    }

    @Test
    void boundsErrorsNameTheSequenceTheOffsetAndTheStoredCount() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes()); SequenceKv seq = filled(pool, tokens(128, 1))) {
            long id = seq.id();
            var read = assertThrows(KvBoundsException.class, () -> seq.read(130, 0, KvKind.KEY));
            assertEquals("sequence " + id + ": offset 130 exceeds 128 stored positions", read.getMessage());
            assertEquals(id, read.sequenceId());
            assertEquals(130, read.offset());
            assertEquals(128, read.stored());
            var atEnd = assertThrows(KvBoundsException.class, () -> seq.read(128, 1, KvKind.VALUE));
            assertEquals("sequence " + id + ": offset 128 exceeds 128 stored positions", atEnd.getMessage());
            var trunc = assertThrows(KvBoundsException.class, () -> seq.truncate(130));
            assertEquals("sequence " + id + ": offset 130 exceeds 128 stored positions", trunc.getMessage());
            var neg = assertThrows(KvBoundsException.class, () -> seq.read(-1, 0, KvKind.KEY));
            assertEquals("sequence " + id + ": offset -1 is negative (128 stored positions)", neg.getMessage());
            var write = assertThrows(KvBoundsException.class, () -> seq.write(5, 0, KvKind.KEY, new float[3]));
            assertEquals("sequence " + id + ": write at offset 5 with no open step (128 stored positions)", write.getMessage());
            seq.begin(4);
            var past = assertThrows(KvBoundsException.class, () -> seq.write(132, 0, KvKind.KEY, new float[3]));
            assertEquals("sequence " + id + ": write at offset 132 outside the open step [128, 132) (132 stored positions)", past.getMessage());
            var committed = assertThrows(KvBoundsException.class, () -> seq.write(127, 0, KvKind.KEY, new float[3]));
            assertEquals("sequence " + id + ": write at offset 127 outside the open step [128, 132) (132 stored positions)", committed.getMessage());
            seq.rollback();
            assertEquals(128, seq.length());
            assertNull(KvOracle.mismatch(seq, tokens(128, 1), 128));
        }
    }

    @Test
    void rollbackReturnsToTheCommittedLengthAndReleasesTheStepsPages() {
        try (PagePool pool = new PagePool(LAYOUT, 64 * LAYOUT.pageBytes()); SequenceKv seq = filled(pool, tokens(20, 2))) {
            int used = pool.usedPages();
            int[] table = seq.pages(0, seq.pageCount());
            seq.begin(40);
            assertEquals(60, seq.stored());
            assertEquals(used + 2, pool.usedPages());
            seq.write(45, 1, KvKind.VALUE, new float[] {9, 9, 9});
            seq.rollback();
            assertEquals(20, seq.length());
            assertEquals(used, pool.usedPages());
            assertArrayEquals(table, seq.pages(0, seq.pageCount()));
            assertThrows(KvBoundsException.class, () -> seq.read(20, 0, KvKind.KEY));
            assertNull(KvOracle.mismatch(seq, tokens(20, 2), 20));
            assertThrows(IllegalStateException.class, seq::commit);
        }
    }

    @Test
    void aFailedAllocationLeavesTheSequenceUnchanged() {
        try (PagePool pool = new PagePool(LAYOUT, 3 * LAYOUT.pageBytes()); SequenceKv seq = filled(pool, tokens(20, 3))) {
            assertThrows(KvBudgetExhaustedException.class, () -> seq.begin(100));
            assertFalse(seq.inStep());
            assertEquals(20, seq.length());
            assertEquals(2, pool.usedPages());
            seq.begin(10);
            seq.commit();
            assertEquals(30, seq.length());
        }
    }

    @Test
    void aForkCopiesTheSharedPartialPageBeforeWritingAndLeavesTheOriginalIntact() {
        int[] a = tokens(40, 4);
        try (PagePool pool = new PagePool(LAYOUT, 16 * LAYOUT.pageBytes()); SequenceKv original = filled(pool, a)) {
            SequenceKv fork = original.fork();
            assertEquals(2, pool.refCount(original.pageId(2)));
            int[] bt = java.util.Arrays.copyOf(a, 50);
            for (int i = 40; i < 50; i++) bt[i] = 7 + i;
            fork.begin(10);
            assertNotEquals(original.pageId(2), fork.pageId(2), "copy-on-write of the partially filled page");
            assertEquals(original.pageId(1), fork.pageId(1), "full pages stay shared");
            KvOracle.writeAll(fork, bt, 40, 50);
            fork.commit();
            assertEquals(1, pool.refCount(original.pageId(2)));
            assertNull(KvOracle.mismatch(original, a, 40));
            assertNull(KvOracle.mismatch(fork, bt, 50));
            // continuing the original now writes in place: it is the page's only holder
            int page = original.pageId(2);
            original.begin(1);
            assertEquals(page, original.pageId(2));
            original.rollback();
            fork.close();
            assertEquals(3, pool.usedPages());
        }
    }

    @Test
    void rollbackAfterCopyOnWriteRestoresTheSharedPage() {
        int[] a = tokens(20, 5);
        try (PagePool pool = new PagePool(LAYOUT, 16 * LAYOUT.pageBytes()); SequenceKv original = filled(pool, a);
             SequenceKv fork = original.fork()) {
            int shared = fork.pageId(1);
            fork.begin(3);
            assertNotEquals(shared, fork.pageId(1));
            fork.rollback();
            assertEquals(shared, fork.pageId(1));
            assertEquals(2, pool.refCount(shared));
            assertEquals(2, pool.usedPages());
        }
    }

    @Test
    void truncateReleasesPagesPastTheNewLength() {
        try (PagePool pool = new PagePool(LAYOUT, 16 * LAYOUT.pageBytes()); SequenceKv seq = filled(pool, tokens(50, 6))) {
            assertEquals(4, pool.usedPages());
            seq.truncate(17);
            assertEquals(2, pool.usedPages());
            assertEquals(17, seq.length());
            assertNull(KvOracle.mismatch(seq, tokens(50, 6), 17));
            seq.truncate(0);
            assertEquals(0, pool.usedPages());
        }
    }

    @Test
    void closeReleasesEverythingAndLaterUseFails() {
        try (PagePool pool = new PagePool(LAYOUT, 16 * LAYOUT.pageBytes())) {
            SequenceKv seq = filled(pool, tokens(30, 7));
            seq.begin(5);
            seq.close();
            seq.close();
            assertEquals(0, pool.usedPages());
            assertThrows(IllegalStateException.class, () -> seq.read(0, 0, KvKind.KEY));
        }
    }
}
