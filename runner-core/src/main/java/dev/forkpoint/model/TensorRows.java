package dev.forkpoint.model;

import dev.forkpoint.tensor.GgmlType;

/**
 * One tensor's rows as floats, whatever the file stores (F32, F16, BF16, GGUF blocks, MLX affine or fp codes), for
 * what rewrites a model rather than runs it (the converter): its name, its shape in row-major order ({@code [rows,
 * cols]}, {@code [n]}, or three dimensions for a hybrid's convolution and stacked experts, whose rows are all but the
 * last axis) and a reader of its rows.
 *
 * @param floatType the stored element type when it is a plain float type (F32, F16, BF16) that the floats reproduce
 *                  exactly; null when the tensor is quantised
 * @param origin    "file: tensor" for messages
 */
public record TensorRows(String name, long[] shape, GgmlType floatType, String origin, RowReader reader) {

    /** Reads row {@code row} (of {@link #rows()}) into dst[0 … cols). Safe to call from several threads. */
    @FunctionalInterface
    public interface RowReader {
        void read(int row, float[] dst);
    }

    /** Rows: every dimension but the last ({@code E·out} for stacked experts [E, out, in]; 1 for a vector). */
    public int rows() {
        long r = 1;
        for (int i = 0; i < shape.length - 1; i++) r *= shape[i];
        return Math.toIntExact(r);
    }

    public int cols() { return Math.toIntExact(shape[shape.length - 1]); }

    public boolean isMatrix() { return shape.length == 2; }

    /** The module path: the name without its last component ("model.layers.0.self_attn.q_proj"). */
    public String module() { return name.substring(0, name.lastIndexOf('.')); }

    public void read(int row, float[] dst) { reader.read(row, dst); }
}
