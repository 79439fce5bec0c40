package dev.forkpoint.convert;

import dev.forkpoint.tensor.GgmlType;

/**
 * One weight of a model being converted, seen in Hugging Face terms: its Hugging Face name ({@code
 * model.layers.0.self_attn.q_proj.weight}), its shape in row-major order ({@code [rows, cols]}, {@code [n]}, or a
 * hybrid's three-dimensional convolution and stacked experts, whose rows are all but the last axis) and its
 * rows in Hugging Face row order as floats, whatever the source stores (GGUF blocks, MLX affine codes, F16…).
 *
 * @param floatType the source's element type when it is a plain float type (F32, F16, BF16) that the floats
 *                  reproduce exactly; null when the source was quantised
 * @param origin    "file: tensor" for messages
 */
record SourceTensor(String name, long[] shape, GgmlType floatType, String origin, RowReader reader) {

    /** Reads row {@code row} (of {@link #rows()}) into dst[0 … cols). Safe to call from several threads. */
    @FunctionalInterface
    interface RowReader {
        void read(int row, float[] dst);
    }

    /** Rows: every dimension but the last ({@code E·out} for stacked experts [E, out, in]; 1 for a vector). */
    int rows() {
        long r = 1;
        for (int i = 0; i < shape.length - 1; i++) r *= shape[i];
        return Math.toIntExact(r);
    }

    int cols() { return Math.toIntExact(shape[shape.length - 1]); }

    boolean isMatrix() { return shape.length == 2; }

    /** The module path: the name without its last component ("model.layers.0.self_attn.q_proj"). */
    String module() { return name.substring(0, name.lastIndexOf('.')); }

    void read(int row, float[] dst) { reader.read(row, dst); }
}
