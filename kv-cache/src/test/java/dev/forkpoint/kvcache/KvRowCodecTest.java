package dev.forkpoint.kvcache;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The quantised KV element types against a float64 reference written here: the byte layout decoded by hand, and every
 * element within the per-element bound {@link KvRowCodec} states.
 */
class KvRowCodecTest {
    private static final double SLACK = Math.scalb(1.0, -17);

    /** Rows of every kind that stress the scale: gaussian, zeros, a lone outlier, tiny values, ties in magnitude. */
    private static float[][] rows(int n) {
        Random r = new Random(7);
        float[][] rows = new float[200][n];
        for (int k = 0; k < rows.length; k++) {
            float[] x = rows[k];
            double spread = Math.pow(10, r.nextInt(9) - 6);   // 1e-6 … 1e2
            for (int i = 0; i < n; i++) x[i] = (float) (r.nextGaussian() * spread);
            switch (k % 6) {
                case 1 -> java.util.Arrays.fill(x, 0, Math.min(n, 40), 0f);                // a whole block of zeros
                case 2 -> x[r.nextInt(n)] = (float) (spread * 300 * (r.nextBoolean() ? 1 : -1));   // an outlier
                case 3 -> { x[3] = (float) (spread * 5); x[7] = (float) (-spread * 5); }     // ±a tied
                case 4 -> { for (int i = 0; i < n; i++) x[i] = (float) ((r.nextDouble() - 0.5) * 1e-9); }   // subnormal scales
                default -> { }
            }
        }
        return rows;
    }

    private static double halfFloat(MemorySegment s, long at) {
        return Float.float16ToFloat(s.get(ValueLayout.JAVA_SHORT_UNALIGNED, at));
    }

    @Test
    void q8RowsReadBackWithinHalfAStepOfTheirBlockMaximum() {
        int n = 96;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(KvElementType.Q8_0.rowBytes(n));
            assertEquals(3 * 34, seg.byteSize());
            float[] back = new float[n];
            for (float[] x : rows(n)) {
                KvRowCodec.store(KvElementType.Q8_0, x, 0, n, seg, 0);
                KvRowCodec.load(KvElementType.Q8_0, seg, 0, back, 0, n);
                for (int b = 0; b < n / 32; b++) {
                    double a = 0;
                    for (int i = 0; i < 32; i++) a = Math.max(a, Math.abs((double) x[b * 32 + i]));
                    double d = halfFloat(seg, b * 34L);
                    double bound = a / 254 * (1 + Math.scalb(1.0, -10)) + SLACK;
                    for (int i = 0; i < 32; i++) {
                        int e = b * 32 + i;
                        double decoded = d * seg.get(ValueLayout.JAVA_BYTE, b * 34L + 2 + i);   // the layout, by hand
                        assertEquals(decoded, back[e], 0.0, "element " + e + ": the reader and the layout disagree");
                        assertTrue(Math.abs(x[e] - decoded) <= bound, "element " + e + ": " + x[e] + " read back as " + decoded + ", bound " + bound);
                    }
                    if (a == 0) assertEquals(0.0, d, "a block of zeros stores scale 0");
                }
            }
        }
    }

    @Test
    void q4RowsReadBackWithinTheStatedBoundAndTheLargestElementSetsTheScale() {
        int n = 64;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(KvElementType.Q4_0.rowBytes(n));
            assertEquals(2 * 18, seg.byteSize());
            float[] back = new float[n];
            double worstRelative = 0;
            for (float[] x : rows(n)) {
                KvRowCodec.store(KvElementType.Q4_0, x, 0, n, seg, 0);
                KvRowCodec.load(KvElementType.Q4_0, seg, 0, back, 0, n);
                for (int b = 0; b < n / 32; b++) {
                    double a = 0, m = 0;
                    for (int i = 0; i < 32; i++) {
                        double v = x[b * 32 + i];
                        if (Math.abs(v) > Math.abs(m)) m = v;
                        a = Math.max(a, Math.abs(v));
                    }
                    double d = halfFloat(seg, b * 18L);
                    assertTrue(Math.abs(d) <= a / 8 * (1 + Math.scalb(1.0, -10)) + SLACK, "scale " + d + " for a block maximum " + a);
                    if (a > 1e-3) assertEquals(-8.0, Math.rint(m / d), "the signed extreme " + m + " maps to -8");
                    for (int i = 0; i < 32; i++) {
                        int e = b * 32 + i;
                        int packed = seg.get(ValueLayout.JAVA_BYTE, b * 18L + 2 + (i % 16)) & 0xff;
                        int nibble = i < 16 ? packed & 15 : packed >>> 4;
                        double decoded = d * (nibble - 8);
                        assertEquals(decoded, back[e], 0.0, "element " + e + ": the reader and the layout disagree");
                        double err = Math.abs(x[e] - decoded);
                        double bound = d != 0 && x[e] / d > 7.5 ? Math.abs(d) * (1 + Math.scalb(1.0, -6)) + SLACK
                                : Math.abs(d) / 2 * (1 + Math.scalb(1.0, -10)) + SLACK;
                        assertTrue(err <= bound, "element " + e + ": " + x[e] + " read back as " + decoded + ", bound " + bound);
                        if (a > 1e-3) worstRelative = Math.max(worstRelative, err / a);
                    }
                }
            }
            assertTrue(worstRelative <= 1 / 8.0 * (1 + Math.scalb(1.0, -6)), "worst error / block maximum " + worstRelative);
        }
    }

    @Test
    void floatTypesRoundTripAsBefore() {
        float[] x = {1.5f, -0.1f, 65504f, 1e-8f};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(16);
            float[] back = new float[4];
            KvRowCodec.store(KvElementType.F32, x, 0, 4, seg, 0);
            KvRowCodec.load(KvElementType.F32, seg, 0, back, 0, 4);
            assertArrayEquals(x, back);
            KvRowCodec.store(KvElementType.F16, x, 0, 4, seg, 0);
            KvRowCodec.load(KvElementType.F16, seg, 0, back, 0, 4);
            for (int i = 0; i < 4; i++) assertEquals(Float.float16ToFloat(Float.floatToFloat16(x[i])), back[i], 0f);
        }
    }

    @Test
    void rowSizesComeFromTheTypeAndPartialBlocksAreRefusedNamingBoth() {
        assertEquals(128 * 34 / 32, KvElementType.Q8_0.rowBytes(128));
        assertEquals(128 * 18 / 32, KvElementType.Q4_0.rowBytes(128));
        KvLayout q8 = KvLayout.of(2, 256, KvElementType.Q8_0), f16 = KvLayout.of(2, 256, KvElementType.F16);
        assertEquals(2L * 2 * 16 * 256 / 32 * 34, q8.pageBytes());
        assertEquals(2L * 2 * 256 / 32 * 34, q8.positionBytes());
        double ratio = (double) f16.pageBytes() / q8.pageBytes();
        assertTrue(ratio > 1.88 && ratio < 1.89, "f16 / q8_0 page bytes " + ratio);
        assertEquals(512.0 / 144, (double) f16.pageBytes() / KvLayout.of(2, 256, KvElementType.Q4_0).pageBytes(), 1e-12);
        var e = assertThrows(IllegalArgumentException.class, () -> KvLayout.of(1, 80, KvElementType.Q4_0));
        assertTrue(e.getMessage().contains("q4_0") && e.getMessage().contains("80"), e.getMessage());
    }

    @Test
    void aForkCopiesTheQuantisedBytesOfAPartialPageAndRollbackLeavesThemAlone() {
        KvLayout layout = new KvLayout(2, 64, KvElementType.Q8_0, 16);
        Random r = new Random(3);
        try (PagePool pool = new PagePool(layout, 16 * layout.pageBytes()); SequenceKv seq = pool.newSequence()) {
            float[][] written = new float[20][64];
            seq.begin(20);
            for (int p = 0; p < 20; p++) {
                for (int i = 0; i < 64; i++) written[p][i] = (float) r.nextGaussian();
                for (int layer = 0; layer < 2; layer++) for (KvKind kind : KvKind.values()) seq.write(p, layer, kind, written[p]);
            }
            seq.commit();
            float[][] stored = new float[20][];
            for (int p = 0; p < 20; p++) stored[p] = seq.read(p, 1, KvKind.VALUE);
            try (SequenceKv child = seq.fork()) {
                child.begin(3);   // the shared partial page (positions 16 … 19) is copied for the child
                for (int p = 20; p < 23; p++) child.write(p, 0, KvKind.KEY, written[0]);
                for (int p = 0; p < 20; p++) assertArrayEquals(stored[p], child.read(p, 1, KvKind.VALUE), "position " + p + " after the copy");
                child.rollback();
                for (int p = 0; p < 20; p++) assertArrayEquals(stored[p], child.read(p, 1, KvKind.VALUE), "position " + p + " after rollback");
            }
            for (int p = 0; p < 20; p++) assertArrayEquals(stored[p], seq.read(p, 1, KvKind.VALUE), "the parent's position " + p);
        }
    }
}
