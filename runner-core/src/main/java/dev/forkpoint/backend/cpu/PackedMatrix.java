package dev.forkpoint.backend.cpu;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.FpTensor;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;

/**
 * A weight matrix of {@code rows} × {@code cols} read in place from its packed GGML blocks (never dequantised into
 * a copy): each row is {@code cols} elements stored contiguously in the matrix's type.
 */
public interface PackedMatrix {
    /** The stored type's name: a GGML type ("Q4_0", "F16"), an affine format ("affine 4-bit g64") or an fp one ("mxfp4"). */
    String typeName();
    int rows();
    int cols();

    /**
     * out[t·rows + r] = Σ_c W[r][c] · x[t·cols + c] for every t &lt; n and every row r, using the pool's threads.
     * n = 1 is decode (matrix–vector); n &gt; 1 is prefill (matrix–matrix).
     */
    default void multiply(float[] x, int n, float[] out, WorkerPool pool) {
        multiplyRows(0, rows(), x, n, out, pool);
    }

    /**
     * Rows [firstRow, firstRow + rowCount) of {@link #multiply}: out[t·rowCount + (r − firstRow)] = Σ_c W[r][c] ·
     * x[t·cols + c] for every t &lt; n, reading only those rows' bytes ({@code rowCount · rowBytes()} of them). The
     * result is bit-identical to the same rows of {@code multiply} with the same n, on the decode path and the
     * prefill GEMM alike: every row's sums are formed on their own, in an order that depends only on n and the
     * columns (never on where the row sits in the range or how the range is split among threads). Any range of whole
     * rows is allowed: every type stores its rows contiguously, each a whole number of blocks or groups.
     */
    void multiplyRows(int firstRow, int rowCount, float[] x, int n, float[] out, WorkerPool pool);

    /**
     * The token counts n up to which a token's results do not depend on n (nor on the other tokens): the decode
     * kernels' {@link KernelSupport#DECODE_MAX_ROWS} for the Java kernels (above it the prefill GEMM rounds
     * differently), any n for the native ones.
     */
    default int invariantTokens() {
        return KernelSupport.DECODE_MAX_ROWS;
    }

    /**
     * The bytes one row occupies in the weight's storage, per-block and per-group scales (and biases) included: what
     * multiplying that row reads from the weights.
     */
    long rowBytes();

    /** Writes the {@code cols} values of row {@code row} as floats to dst[dstOff …]. */
    void dequantizeRow(int row, float[] dst, int dstOff);

    /** The matrix view of an MLX affine-quantised tensor, read in place (its sizes were checked when it was made). */
    static PackedMatrix of(AffineTensor t) {
        return new AffineMatrix(t);
    }

    /** {@link #of(AffineTensor)} on the kernels {@code kernels} chooses (native at 4 and 8 bits): for benchmarks of one matrix. */
    static PackedMatrix of(AffineTensor t, dev.forkpoint.backend.KernelChoice kernels) {
        return of(t, NativeKernels.forChoice(kernels).orElse(null));
    }

    /** {@link #of(AffineTensor)} with the native kernels (used at 4 and 8 bits); null: the Java kernels. */
    static PackedMatrix of(AffineTensor t, NativeKernels nativeKernels) {
        return new AffineMatrix(t, nativeKernels);
    }

    /** The matrix view of an MLX mxfp4 / nvfp4 / mxfp8 tensor, read in place (its sizes were checked when it was made). */
    static PackedMatrix of(FpTensor t) {
        return new FpMatrix(t);
    }

    /**
     * The matrix view of a GGML-typed tensor: shape[0] is cols, the product of the other dimensions rows. The matrix reads
     * the tensor's mapped bytes in place. Throws {@link InvalidInputException} naming the tensor for a type the
     * kernels cannot compute with (listing the supported ones) and when the data does not fit the shape.
     */
    static PackedMatrix of(GgmlTensor t) {
        return of(t, (NativeKernels) null);
    }

    /**
     * {@link #of(GgmlTensor)} on the kernels {@code kernels} chooses for the types the native kernels cover (Q8_0, Q4_0,
     * Q4_K, Q6_K, F32, F16, BF16), as {@link CpuBackend} makes them: for benchmarks of one matrix.
     */
    static PackedMatrix of(GgmlTensor t, dev.forkpoint.backend.KernelChoice kernels) {
        return of(t, NativeKernels.forChoice(kernels).orElse(null));
    }

    /** {@link #of(GgmlTensor)} with the native kernels for the types they cover (Q8_0, Q4_0, Q4_K, Q6_K, F32, F16, BF16); null: the Java kernels. */
    static PackedMatrix of(GgmlTensor t, NativeKernels nativeKernels) {
        int rows = t.rows(), cols = t.rowLength();
        try {
            return switch (t.type()) {
                case F32 -> new F32Matrix(t.data(), rows, cols, nativeKernels);
                case F16 -> new F16Matrix(t.data(), rows, cols, nativeKernels);
                case BF16 -> new BF16Matrix(t.data(), rows, cols, nativeKernels);
                case Q8_0 -> new Q8_0Matrix(t.data(), rows, cols, nativeKernels);
                case Q4_0 -> new Q4_0Matrix(t.data(), rows, cols, nativeKernels);
                case Q4_K -> new Q4KMatrix(t.data(), rows, cols, nativeKernels);
                case Q6_K -> new Q6KMatrix(t.data(), rows, cols, nativeKernels);
                default -> throw new InvalidInputException("tensor " + t.name() + " has type " + t.type()
                        + ", which the CPU kernels do not support; supported tensor types: " + GgmlType.supportedNames());
            };
        } catch (IllegalArgumentException e) {
            throw new InvalidInputException("tensor " + t.name() + " " + t.shapeString() + ": " + e.getMessage(), e);
        }
    }
}
