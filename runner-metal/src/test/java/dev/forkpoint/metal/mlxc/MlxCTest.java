package dev.forkpoint.metal.mlxc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The bindings on a real MLX-C: run when one is found (see {@link MlxTestLibrary}), skipped otherwise. */
@Tag("mlx")
class MlxCTest {

    @Test
    void versionIsMlxs() {
        Mlx mlx = MlxTestLibrary.require();
        assertFalse(mlx.version().isBlank());
        assertTrue(mlx.version().matches("\\d+\\.\\d+\\.\\d+.*"), mlx.version());
        assertEquals(mlx, MlxTestLibrary.require(), "one MLX-C per process");
    }

    @Test
    void matmulEqualsADoublePrecisionReference() {
        Mlx mlx = MlxTestLibrary.require();
        Random random = new Random(14);
        float[] a = randomFloats(random, 3 * 4);
        float[] b = randomFloats(random, 4 * 2);
        try (MlxSession session = mlx.openSession();
             MlxArray x = session.fromFloats(a, 3, 4);
             MlxArray y = session.fromFloats(b, 4, 2);
             MlxArray product = session.matmul(x, y)) {
            assertArrayEquals(new int[] {3, 2}, product.shape());
            float[] got = session.toFloats(product);
            double[] want = matmul(a, b, 3, 4, 2);
            for (int i = 0; i < want.length; i++) {
                assertEquals(want[i], got[i], 1e-6 * Math.abs(want[i]), "element " + i);
            }
        }
    }

    @Test
    void addAddsElementwise() {
        Mlx mlx = MlxTestLibrary.require();
        try (MlxSession session = mlx.openSession();
             MlxArray x = session.fromFloats(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
             MlxArray y = session.fromFloats(new float[] {0.5f, -2, 10, 0, 0.25f, -6}, 2, 3);
             MlxArray sum = session.add(x, y)) {
            assertArrayEquals(new float[] {1.5f, 0, 13, 4, 5.25f, 0}, session.toFloats(sum));
            assertArrayEquals(new int[] {2, 3}, sum.shape());
        }
    }

    @Test
    void aShapeErrorIsAnMlxExceptionWithMlxsMessageAndTheNextCallWorks() {
        Mlx mlx = MlxTestLibrary.require();
        try (MlxSession session = mlx.openSession();
             MlxArray x = session.fromFloats(new float[12], 3, 4);
             MlxArray wrong = session.fromFloats(new float[6], 3, 2)) {
            int live = session.liveArrays();
            MlxException e = assertThrows(MlxException.class, () -> session.matmul(x, wrong));
            assertEquals("mlx_matmul", e.function());
            assertEquals(1, e.returnCode());
            assertTrue(e.mlxMessage() != null && e.mlxMessage().contains("[matmul]"), e.getMessage());
            assertTrue(e.getMessage().contains(e.mlxMessage()));
            assertEquals(live, session.liveArrays(), "the failed call left no array");
            // the process is alive (MLX-C's default handler would have exited) and the next call works
            try (MlxArray eye = session.fromFloats(new float[] {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 4, 4);
                 MlxArray ones = session.fromFloats(new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 3, 4);
                 MlxArray same = session.matmul(ones, eye)) {
                assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, session.toFloats(same));
            }
            // and a second error carries its own message, not the first one's
            MlxException again = assertThrows(MlxException.class, () -> session.add(x, wrong));
            assertEquals("mlx_add", again.function());
            assertFalse(again.mlxMessage().contains("[matmul]"), again.mlxMessage());
        }
    }

    @Test
    void activeMemoryReturnsToItsBaselineAfterAHundredArraysWithInjectedFailures() {
        Mlx mlx = MlxTestLibrary.require();
        Random random = new Random(100);
        try (MlxSession session = mlx.openSession()) {
            session.synchronize();
            long baseline = mlx.activeMemory();
            int failures = 0;
            long highest = baseline;
            for (int i = 0; i < 100; i++) {
                try (MlxArray a = session.fromFloats(randomFloats(random, 16 * 32), 16, 32);
                     MlxArray b = session.fromFloats(randomFloats(random, 32 * 8), 32, 8);
                     MlxArray c = session.matmul(a, b)) {
                    session.eval(c);
                    highest = Math.max(highest, mlx.activeMemory());
                    if (i % 3 == 0) {
                        // injected: a shape error in the middle of a "request", with arrays live
                        try (MlxArray d = session.add(c, c)) {
                            session.matmul(d, a);
                        }
                    }
                    if (i % 7 == 0) {
                        session.fromFloats(new float[5], 2, 3); // refused in Java: no MLX call, nothing made
                    }
                } catch (MlxException | IllegalArgumentException e) {
                    failures++;
                }
            }
            assertEquals(34 + 15 - 5, failures, "every injected failure raised"); // i%3 and i%7 both: one throw
            assertTrue(highest > baseline, "the arrays did take MLX memory");
            assertEquals(0, session.liveArrays());
            session.synchronize();
            assertEquals(baseline, mlx.activeMemory(), "MLX's active memory is back to its baseline");
        }
    }

    @Test
    void aSessionIsUsedOnlyOnItsThread() throws InterruptedException, ExecutionException {
        Mlx mlx = MlxTestLibrary.require();
        try (MlxSession session = mlx.openSession(); MlxArray x = session.fromFloats(new float[] {1}, 1)) {
            Throwable refused = CompletableFuture.supplyAsync(() -> {
                try {
                    session.toFloats(x);
                    return null;
                } catch (IllegalStateException e) {
                    return e;
                }
            }).get();
            assertTrue(refused instanceof IllegalStateException, String.valueOf(refused));
            assertArrayEquals(new float[] {1}, session.toFloats(x));
        }
    }

    @Test
    void closingASessionFreesWhatIsLeft() {
        Mlx mlx = MlxTestLibrary.require();
        long before;
        List<MlxArray> leaked = new ArrayList<>();
        MlxSession session = mlx.openSession();
        session.synchronize();
        before = mlx.activeMemory();
        for (int i = 0; i < 10; i++) {
            leaked.add(session.fromFloats(new float[1024], 32, 32));
        }
        session.eval(leaked.toArray(MlxArray[]::new));
        assertEquals(10, session.liveArrays());
        session.close();
        assertEquals(before, mlx.activeMemory());
        assertThrows(IllegalStateException.class, () -> session.fromFloats(new float[] {1}, 1));
    }

    private static float[] randomFloats(Random random, int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = 0.5f + random.nextFloat();
        }
        return values;
    }

    private static double[] matmul(float[] a, float[] b, int m, int k, int n) {
        double[] c = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0;
                for (int p = 0; p < k; p++) {
                    sum += (double) a[i * k + p] * b[p * n + j];
                }
                c[i * n + j] = sum;
            }
        }
        return c;
    }
}
