package dev.forkpoint.tensor;

/**
 * How an MLX-quantised matrix stores a row: {@link AffineFormat} (codes, a scale and a bias per group) or
 * {@link FpFormat} (small-float codes and one small-float scale per group, no bias). Either way a row of cols
 * elements is cols·bits/32 little-endian uint32 words of codes, element i at bits [i·bits, (i+1)·bits), and
 * cols/groupSize groups.
 */
public sealed interface MlxFormat permits AffineFormat, FpFormat {
    MlxQuantMode mode();

    int bits();

    int groupSize();

    /** The name matrices of this format report as their type ("affine 4-bit g64", "mxfp4"). */
    String typeName();

    /** Bytes of packed codes in a row of {@code cols} elements: cols·bits/8 (cols a multiple of the group size). */
    default long packedBytesPerRow(int cols) {
        return (long) cols * bits() / 8;
    }

    /** uint32 words of packed codes in a row of {@code cols} elements (MLX's weight shape is [rows, this]). */
    default long packedWordsPerRow(int cols) {
        return (long) cols * bits() / 32;
    }

    /** Groups (scales) in a row of {@code cols} elements. */
    default int groupsPerRow(int cols) {
        return cols / groupSize();
    }
}
