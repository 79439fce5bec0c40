package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

/**
 * Batch invariance of the decode kernels: a multiply of n ≤ {@link KernelSupport#DECODE_MAX_ROWS} tokens (a batch of
 * decode rows of several sequences) gives, for every token, exactly the bits of a one-token multiply of that token
 * alone, for every supported type (the multi-row kernels of F32, F16, Q8_0 and Q4_0 as well as the per-row loops of
 * the others). Rounds are repeated so that the kernels are compared after the JIT has compiled them, too.
 */
class MultiRowDecodeKernelTest {
    private static WorkerPool pool;

    @BeforeAll
    static void start() { pool = new WorkerPool(2); }

    @AfterAll
    static void stop() { pool.close(); }

    private static PackedMatrix matrix(GgmlType type, int rows, int cols, long seed) {
        Random rnd = new Random(seed);
        float[] w = new float[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (float) (rnd.nextGaussian() * 0.5);
        MemorySegment seg = Arena.ofAuto().allocate(type.bytesFor(w.length));
        Quantization.quantize(type, w, 0, w.length, seg, 0);
        return PackedMatrix.of(new GgmlTensor("blk.0.test.weight", type, new long[] {cols, rows}, seg));
    }

    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"})
    void everyRowOfABatchEqualsTheRowAlone(GgmlType type) {
        int rows = 37, cols = type == GgmlType.Q4_K || type == GgmlType.Q6_K ? 512 : 96 + 32 * 3; // odd block counts
        PackedMatrix m = matrix(type, rows, cols, 11);
        Random rnd = new Random(5);
        for (int round = 0; round < 6; round++) {
            for (int n : new int[] {2, 3, 4, 5, 8, 11, 16}) {
                float[] x = NativeVariants.gaussian(n * cols, rnd);
                BatchInvariance.assertBatchEqualsTokensAlone(m, x, n, pool, type + " n=" + n);
            }
        }
    }
}
