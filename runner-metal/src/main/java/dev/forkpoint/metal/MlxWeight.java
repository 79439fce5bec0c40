package dev.forkpoint.metal;

import dev.forkpoint.backend.Weight;
import dev.forkpoint.metal.mlxc.MlxArray;

/**
 * A weight on the MLX backend, uploaded as MLX arrays: a dense matrix ({@link Kind#DENSE}: [rows, cols] of float32,
 * float16 or bfloat16, as stored), an affine-quantised matrix ({@link Kind#AFFINE}: uint32 codes [rows, cols·bits/32],
 * scales and biases [rows, cols/groupSize]), or a vector ({@link Kind#VECTOR}: float32 [cols], rows 1).
 */
final class MlxWeight implements Weight {
    enum Kind { DENSE, AFFINE, VECTOR }

    private final String name;
    private final String typeName;
    private final int rows;
    private final int cols;
    final Kind kind;
    final MlxArray array;    // DENSE, VECTOR: the values; AFFINE: the codes
    final MlxArray scales;   // AFFINE only
    final MlxArray biases;   // AFFINE only
    final int bits;
    final int groupSize;

    private MlxWeight(String name, String typeName, int rows, int cols, Kind kind, MlxArray array, MlxArray scales,
                      MlxArray biases, int bits, int groupSize) {
        this.name = name;
        this.typeName = typeName;
        this.rows = rows;
        this.cols = cols;
        this.kind = kind;
        this.array = array;
        this.scales = scales;
        this.biases = biases;
        this.bits = bits;
        this.groupSize = groupSize;
    }

    static MlxWeight dense(String name, String typeName, int rows, int cols, MlxArray values) {
        return new MlxWeight(name, typeName, rows, cols, Kind.DENSE, values, null, null, 0, 0);
    }

    static MlxWeight vector(String name, String typeName, int cols, MlxArray values) {
        return new MlxWeight(name, typeName, 1, cols, Kind.VECTOR, values, null, null, 0, 0);
    }

    static MlxWeight affine(String name, String typeName, int rows, int cols, MlxArray codes, MlxArray scales,
                            MlxArray biases, int bits, int groupSize) {
        return new MlxWeight(name, typeName, rows, cols, Kind.AFFINE, codes, scales, biases, bits, groupSize);
    }

    public String name() { return name; }
    public String typeName() { return typeName; }
    public int rows() { return rows; }
    public int cols() { return cols; }

    /** Frees the arrays (on the backend's MLX thread). */
    void free() {
        array.close();
        if (scales != null) scales.close();
        if (biases != null) biases.close();
    }

    @Override
    public String toString() {
        return name + " (" + typeName + ", " + rows + "×" + cols + ", " + kind + ")";
    }
}
