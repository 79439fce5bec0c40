package dev.forkpoint.backend.cpu;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The invariances the engine's batching relies on, asserted bit for bit for any matrix: a token's results do not
 * depend on the tokens multiplied with it, nor a row's on the slice of rows it is computed in. Shared by the kernel
 * tests; {@code what} names the case in a failure's message.
 */
final class BatchInvariance {
    private BatchInvariance() {}

    /**
     * Multiplies the n tokens of x (token-major) as one batch, asserts that every token's results are the bits of a
     * one-token multiply of that token alone, and returns the batch's results (token-major, m.rows() a token).
     */
    static float[] assertBatchEqualsTokensAlone(PackedMatrix m, float[] x, int n, WorkerPool pool, String what) {
        int rows = m.rows(), cols = m.cols();
        float[] batch = new float[n * rows];
        m.multiply(x, n, batch, pool);
        for (int t = 0; t < n; t++) {
            float[] alone = new float[rows];
            m.multiply(Arrays.copyOfRange(x, t * cols, (t + 1) * cols), 1, alone, pool);
            for (int r = 0; r < rows; r++) {
                int tt = t, rr = r;
                assertEquals(Float.floatToRawIntBits(alone[r]), Float.floatToRawIntBits(batch[t * rows + r]),
                        () -> what + " token " + tt + " row " + rr + ": " + batch[tt * rows + rr] + " batched vs " + alone[rr] + " alone");
            }
        }
        return batch;
    }

    /** Asserts that rows [first, first + count) multiplied as a slice are the bits of those rows of {@code batch}, the whole's results for x. */
    static void assertSliceEqualsWhole(PackedMatrix m, int first, int count, float[] x, int n, float[] batch, WorkerPool pool,
                                       String what) {
        int rows = m.rows();
        float[] slice = new float[n * count];
        m.multiplyRows(first, count, x, n, slice, pool);
        for (int t = 0; t < n; t++) {
            for (int r = 0; r < count; r++) {
                int tt = t, rr = r;
                assertEquals(Float.floatToRawIntBits(batch[t * rows + first + r]), Float.floatToRawIntBits(slice[t * count + r]),
                        () -> what + " slice from row " + first + ", token " + tt + " row " + rr);
            }
        }
    }
}
