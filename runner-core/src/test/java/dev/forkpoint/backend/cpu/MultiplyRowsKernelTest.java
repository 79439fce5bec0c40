package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpCodec;
import dev.forkpoint.tensor.FpFormat;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@link PackedMatrix#multiplyRows} for every matrix type: a row range's outputs are bit for bit those rows of the
 * whole matrix's {@link PackedMatrix#multiply} with the same n, for decode (n = 1, 3, 16) and the prefill GEMM
 * (n = 17, 40), for ranges that start and end anywhere (one row, ragged middles, the last rows, all rows), with one
 * thread and two. Also {@link PackedMatrix#rowBytes}: rows × rowBytes is the matrix's storage, every byte counted.
 */
class MultiplyRowsKernelTest {
    private static final int ROWS = 37;
    private static final int[] TOKENS = {1, 3, 16, 17, 40};
    private static final int[][] RANGES = {{0, ROWS}, {0, 1}, {1, 1}, {5, 13}, {7, 30}, {ROWS - 3, 3}, {ROWS - 1, 1}, {3, 4}, {11, 17}};
    private static WorkerPool pool1, pool2;

    @BeforeAll
    static void pools() {
        pool1 = new WorkerPool(1);
        pool2 = new WorkerPool(2);
    }

    @AfterAll
    static void close() {
        pool1.close();
        pool2.close();
    }

    /** A matrix of every supported kind, with the bytes its storage takes. */
    record Case(PackedMatrix matrix, long storageBytes) {}

    static List<Case> allTypes(int rows, int cols) {
        List<Case> cases = new ArrayList<>();
        Random rnd = new Random(rows * 31L + cols);
        for (GgmlType t : new GgmlType[] {GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K}) {
            float[] w = gaussian(rnd, rows * cols);
            MemorySegment seg = Arena.ofAuto().allocate(t.bytesFor(w.length));
            Quantization.quantize(t, w, 0, w.length, seg, 0);
            cases.add(new Case(PackedMatrix.of(new GgmlTensor("blk.0.ffn_up.weight", t, new long[] {cols, rows}, seg)), seg.byteSize()));
        }
        for (int bits : new int[] {2, 3, 4, 5, 6, 8}) {
            for (GgmlType st : new GgmlType[] {GgmlType.BF16, GgmlType.F32}) {
                AffineTensor a = AffineCodec.quantize(gaussian(rnd, rows * cols), rows, cols, new AffineFormat(bits, 64), st)
                        .toTensor("model.layers.0.mlp.up_proj", st, Arena.ofAuto());
                cases.add(new Case(PackedMatrix.of(a), a.packed().byteSize() + a.scales().byteSize() + a.biases().byteSize()));
            }
        }
        for (FpFormat f : FpFormat.values()) {
            FpTensor t = FpCodec.quantize(gaussian(rnd, rows * cols), rows, cols, f).toTensor("blk.0.ffn_up.weight", Arena.ofAuto());
            cases.add(new Case(PackedMatrix.of(t), t.packed().byteSize() + t.scales().byteSize()));
        }
        return cases;
    }

    private static float[] gaussian(Random rnd, int count) {
        float[] w = new float[count];
        for (int i = 0; i < count; i++) w[i] = (float) (rnd.nextGaussian() * 0.5);
        return w;
    }

    @Test
    void rowRangesEqualTheFullMultiplysRows() {
        for (int cols : new int[] {256, 512}) {
            for (Case c : allTypes(ROWS, cols)) {
                PackedMatrix m = c.matrix();
                for (int n : TOKENS) {
                    Random rnd = new Random(n * 7L + cols);
                    float[] x = new float[n * cols];
                    for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
                    float[] full = new float[n * ROWS];
                    m.multiply(x, n, full, pool2);
                    for (int[] range : RANGES) {
                        int first = range[0], count = range[1];
                        for (WorkerPool pool : new WorkerPool[] {pool1, pool2}) {
                            float[] part = new float[n * count];
                            m.multiplyRows(first, count, x, n, part, pool);
                            for (int t = 0; t < n; t++) {
                                for (int r = 0; r < count; r++) {
                                    float want = full[t * ROWS + first + r], got = part[t * count + r];
                                    if (Float.floatToRawIntBits(want) != Float.floatToRawIntBits(got)) {
                                        fail(m.typeName() + " cols " + cols + " n " + n + " rows [" + first + ", +" + count + ") with "
                                                + pool.threads() + " threads: token " + t + " row " + (first + r) + ": " + got + " vs " + want);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /** A range reads its own rows: each row's output moves when (only) that row's bytes are different. */
    @Test
    void aRangeReadsItsOwnRows() {
        int cols = 64;
        float[] w = new float[ROWS * cols];
        for (int r = 0; r < ROWS; r++) for (int c = 0; c < cols; c++) w[r * cols + c] = r + 1;
        MemorySegment seg = MemorySegment.ofArray(w);
        PackedMatrix m = new F32Matrix(seg, ROWS, cols);
        float[] x = new float[cols];
        java.util.Arrays.fill(x, 1f);
        float[] out = new float[13];
        m.multiplyRows(5, 13, x, 1, out, pool2);
        for (int r = 0; r < 13; r++) assertEquals((r + 6) * cols, out[r], "row " + (r + 5));
    }

    @Test
    void rowBytesCountTheWholeStorage() {
        for (Case c : allTypes(ROWS, 512)) {
            assertEquals(c.storageBytes(), ROWS * c.matrix().rowBytes(), c.matrix().typeName());
        }
    }

    @Test
    void badRangesAreRejected() {
        PackedMatrix m = allTypes(ROWS, 256).get(3).matrix();   // Q8_0
        float[] x = new float[256];
        assertThrows(IndexOutOfBoundsException.class, () -> m.multiplyRows(-1, 2, x, 1, new float[2], pool1));
        assertThrows(IndexOutOfBoundsException.class, () -> m.multiplyRows(ROWS - 1, 2, x, 1, new float[2], pool1));
        assertThrows(IndexOutOfBoundsException.class, () -> m.multiplyRows(0, 0, x, 1, new float[2], pool1));
        assertThrows(IllegalArgumentException.class, () -> m.multiplyRows(3, 4, x, 1, new float[3], pool1));
        assertThrows(IllegalArgumentException.class, () -> m.multiplyRows(3, 4, x, 2, new float[8], pool1));
    }
}
