package dev.forkpoint.backend.cpu;

import dev.forkpoint.tensor.GgmlType;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** An F32 weight matrix read from the mapped file. */
final class F32Matrix implements PackedMatrix {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final MemorySegment data;
    private final int rows;
    private final int cols;

    F32Matrix(MemorySegment data, int rows, int cols) {
        this.data = data;
        this.rows = rows;
        this.cols = cols;
    }

    public GgmlType type() { return GgmlType.F32; }
    public int rows() { return rows; }
    public int cols() { return cols; }

    public void multiply(float[] x, int n, float[] out, WorkerPool pool) {
        pool.runRanges(rows, pool.threads() * 4, (from, to) -> {
            for (int r = from; r < to; r++) {
                long base = (long) r * cols * 4;
                for (int t = 0; t < n; t++) out[t * rows + r] = dot(base, x, t * cols);
            }
        });
    }

    private float dot(long base, float[] x, int xOff) {
        FloatVector acc = FloatVector.zero(S);
        int c = 0;
        int bound = S.loopBound(cols);
        for (; c < bound; c += S.length()) {
            FloatVector w = FloatVector.fromMemorySegment(S, data, base + c * 4L, ByteOrder.LITTLE_ENDIAN);
            acc = w.fma(FloatVector.fromArray(S, x, xOff + c), acc);
        }
        float sum = acc.reduceLanes(VectorOperators.ADD);
        for (; c < cols; c++) sum += data.get(F, base + c * 4L) * x[xOff + c];
        return sum;
    }

    public void dequantizeRow(int row, float[] dst, int dstOff) {
        MemorySegment.copy(data, F, (long) row * cols * 4, dst, dstOff, cols);
    }
}
