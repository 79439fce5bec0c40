package dev.forkpoint.backend.cpu;

import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;

/**
 * A weight matrix of {@code rows} × {@code cols} read in place from its packed GGML blocks (never dequantised into
 * a copy): each row is {@code cols} elements stored contiguously in the matrix's type.
 */
public interface PackedMatrix {
    GgmlType type();
    int rows();
    int cols();

    /**
     * out[t·rows + r] = Σ_c W[r][c] · x[t·cols + c] for every t &lt; n and every row r, using the pool's threads.
     * n = 1 is decode (matrix–vector); n &gt; 1 is prefill (matrix–matrix).
     */
    void multiply(float[] x, int n, float[] out, WorkerPool pool);

    /** Writes the {@code cols} values of row {@code row} as floats to dst[dstOff …]. */
    void dequantizeRow(int row, float[] dst, int dstOff);

    /** The matrix view of a GGUF tensor: shape[0] is cols, the product of the other dimensions rows. */
    static PackedMatrix of(GgufTensor t) {
        return switch (t.type()) {
            case F32 -> new F32Matrix(t.data(), t.rows(), t.rowLength());
            default -> throw new UnsupportedOperationException("tensor " + t.name() + " has type " + t.type()
                    + "; supported tensor types: " + GgmlType.supportedNames());
        };
    }
}
