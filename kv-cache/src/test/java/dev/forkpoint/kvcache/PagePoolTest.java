package dev.forkpoint.kvcache;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class PagePoolTest {

    @Test
    void pageCountIsTheBudgetDividedByThePageSizeAndNeverMore() {
        KvLayout layout = new KvLayout(3, 8, KvElementType.F16, 16);
        assertEquals(3L * 2 * 16 * 8 * 2, layout.pageBytes());
        try (PagePool pool = new PagePool(layout, 10 * layout.pageBytes() + layout.pageBytes() - 1)) {
            assertEquals(10, pool.totalPages());
            assertTrue(pool.capacityBytes() <= pool.budgetBytes());
            assertEquals(0, pool.usedBytes());
        }
    }

    @Test
    void budgetBelowOnePageIsRefusedNamingBoth() {
        KvLayout layout = new KvLayout(2, 4, KvElementType.F32, 16);
        var e = assertThrows(IllegalArgumentException.class, () -> new PagePool(layout, 100));
        assertTrue(e.getMessage().contains("100 bytes") && e.getMessage().contains(layout.pageBytes() + " bytes"), e.getMessage());
    }

    @Test
    void allocationFailsWithATypedExceptionWhenTheBudgetIsExhausted() {
        KvLayout layout = new KvLayout(1, 2, KvElementType.F32, 4);
        try (PagePool pool = new PagePool(layout, 3 * layout.pageBytes())) {
            int[] pages = pool.allocate(2);
            assertEquals(2, pool.usedPages());
            var e = assertThrows(KvBudgetExhaustedException.class, () -> pool.allocate(2));
            assertEquals(2, e.pagesNeeded());
            assertEquals(1, e.pagesFree());
            assertEquals(2, pool.usedPages(), "a failed allocation takes nothing");
            pool.release(pages, 0, 2);
            assertEquals(0, pool.usedPages());
            assertThrows(IllegalStateException.class, () -> pool.release(pages[0]));
        }
    }

    @Test
    void referenceCountsFreeAPageOnlyWhenTheLastHolderReleases() {
        KvLayout layout = new KvLayout(1, 2, KvElementType.F32, 4);
        try (PagePool pool = new PagePool(layout, 2 * layout.pageBytes())) {
            int page = pool.allocate(1)[0];
            pool.retain(page);
            assertEquals(2, pool.refCount(page));
            pool.release(page);
            assertEquals(1, pool.usedPages());
            pool.release(page);
            assertEquals(0, pool.usedPages());
        }
    }

    @Test
    void documentedByteLayoutAndSlabs() {
        KvLayout layout = new KvLayout(2, 3, KvElementType.F32, 4);
        try (PagePool pool = new PagePool(layout, 4 * layout.pageBytes()); SequenceKv seq = pool.newSequence()) {
            seq.begin(6);
            float[] v = {1.5f, -2.25f, 3.0f};
            seq.write(5, 1, KvKind.VALUE, v);
            // position 5 → table index 1, slot 1; layer 1 V → slab (2·1 + 1) of the page
            MemorySegment slab = seq.pageSlab(1, 1, KvKind.VALUE);
            assertEquals(layout.slabBytes(), slab.byteSize());
            for (int e = 0; e < 3; e++) assertEquals(v[e], slab.getAtIndex(ValueLayout.JAVA_FLOAT, 1 * 3 + e));
            MemorySegment whole = MemorySegment.ofAddress(slab.address() - (2L * 1 + 1) * layout.slabBytes());
            assertEquals(slab.address() - 3 * layout.slabBytes(), whole.address());
            assertEquals(pool.slab(seq.pageId(1), 0, KvKind.KEY).address(), whole.address(), "page starts with layer 0 K");
            assertArrayEquals(v, seq.read(5, 1, KvKind.VALUE));
            seq.commit();
        }
    }

    @Test
    void f16ElementsRoundThroughBinary16() {
        KvLayout layout = new KvLayout(1, 4, KvElementType.F16, 16);
        try (PagePool pool = new PagePool(layout, layout.pageBytes()); SequenceKv seq = pool.newSequence()) {
            seq.begin(1);
            float[] v = {1f / 3, 65504f, -0.0f, 1e-7f};
            seq.write(0, 0, KvKind.KEY, v);
            float[] got = seq.read(0, 0, KvKind.KEY);
            for (int e = 0; e < 4; e++) {
                assertEquals(Float.floatToRawIntBits(Float.float16ToFloat(Float.floatToFloat16(v[e]))), Float.floatToRawIntBits(got[e]));
            }
            short raw = seq.pageSlab(0, 0, KvKind.KEY).getAtIndex(ValueLayout.JAVA_SHORT, 0);
            assertEquals(Float.floatToFloat16(1f / 3), raw);
            seq.rollback();
        }
    }
}
