package dev.forkpoint.bench.probe;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Percentiles against values worked out by hand with numpy's linear method: h = (n − 1)·p/100, interpolate x[⌊h⌋], x[⌊h⌋+1]. */
class PercentilesTest {
    private static final double EPS = 1e-9;

    @Test
    void threeSamplesGivenOutOfOrder() {
        // sorted 10, 20, 30 (n = 3, n − 1 = 2)
        // p50: h = 2·0.50 = 1.00 → x[1] = 20
        // p95: h = 2·0.95 = 1.90 → 20 + 0.90·(30 − 20) = 29
        // p99: h = 2·0.99 = 1.98 → 20 + 0.98·(30 − 20) = 29.8
        // (nearest rank would give 30 for both p95 and p99)
        Percentiles p = Percentiles.of(new double[] {30, 10, 20});
        assertEquals(3, p.count());
        assertEquals(10, p.min(), EPS);
        assertEquals(20, p.p50(), EPS);
        assertEquals(29, p.p95(), EPS);
        assertEquals(29.8, p.p99(), EPS);
        assertEquals(30, p.max(), EPS);
        assertEquals(20, p.mean(), EPS);
    }

    @Test
    void oneToTen() {
        // sorted 1 … 10 (n − 1 = 9)
        // p50: h = 4.50 → x[4] + 0.50·(x[5] − x[4]) = 5 + 0.5 = 5.5
        // p95: h = 8.55 → x[8] + 0.55·(x[9] − x[8]) = 9 + 0.55 = 9.55
        // p99: h = 8.91 → 9 + 0.91 = 9.91; mean 55 / 10 = 5.5
        Percentiles p = Percentiles.of(new double[] {4, 9, 1, 7, 10, 2, 6, 3, 8, 5});
        assertEquals(5.5, p.p50(), EPS);
        assertEquals(9.55, p.p95(), EPS);
        assertEquals(9.91, p.p99(), EPS);
        assertEquals(5.5, p.mean(), EPS);
    }

    @Test
    void unevenGaps() {
        // sorted 1, 2, 4, 100 (n − 1 = 3)
        // p50: h = 1.50 → 2 + 0.50·(4 − 2) = 3
        // p95: h = 2.85 → 4 + 0.85·(100 − 4) = 85.6
        // p99: h = 2.97 → 4 + 0.97·96 = 97.12
        // p25: h = 0.75 → 1 + 0.75·(2 − 1) = 1.75
        Percentiles p = Percentiles.of(new double[] {100, 1, 4, 2});
        assertEquals(3, p.p50(), EPS);
        assertEquals(85.6, p.p95(), EPS);
        assertEquals(97.12, p.p99(), EPS);
        assertEquals(1.75, Percentiles.ofSorted(new double[] {1, 2, 4, 100}, 25), EPS);
    }

    @Test
    void oneValueIsEveryPercentileAndNaNsAreDropped() {
        Percentiles one = Percentiles.of(new double[] {7});
        assertEquals(7, one.p50(), EPS);
        assertEquals(7, one.p99(), EPS);
        // NaN, 4, 2 → 2, 4: p50 h = 0.5 → 3; p95 h = 0.95 → 2 + 0.95·2 = 3.9
        Percentiles withNaN = Percentiles.of(new double[] {Double.NaN, 4, 2});
        assertEquals(2, withNaN.count());
        assertEquals(3, withNaN.p50(), EPS);
        assertEquals(3.9, withNaN.p95(), EPS);
        Percentiles none = Percentiles.of(new double[] {Double.NaN});
        assertEquals(0, none.count());
        assertTrue(Double.isNaN(none.p50()));
        assertThrows(IllegalArgumentException.class, () -> Percentiles.ofSorted(new double[] {1}, 101));
    }
}
