package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A matrix quantised in one of MLX's floating-point formats ({@link FpFormat}: mxfp4, nvfp4, mxfp8), as a quantised
 * Linear or Embedding of an MLX model stores it: {@code rows} outputs of {@code cols} inputs; {@code packed} holds
 * each row's codes (rows · cols · bits / 8 bytes, MLX's uint32 {@code weight} [rows, cols·bits/32] little-endian),
 * {@code scales} one scale byte per group, row-major [rows, cols / groupSize] (MLX's uint8 {@code scales}). Element
 * (r, c) is value(code(r, c)) · value(scale[r, c / groupSize]).
 * <p>The constructor checks every size and throws {@link InvalidInputException} naming the tensor with the expected and
 * the actual size, so a matrix that exists can be read without further bounds worries.
 */
public record FpTensor(String name, int rows, int cols, FpFormat format, MemorySegment packed, MemorySegment scales)
        implements WeightSource {

    public FpTensor {
        if (name == null || format == null || packed == null || scales == null) {
            throw new InvalidInputException("fp tensor " + name + ": name, format, packed codes and scales are all required");
        }
        if (rows < 1 || cols < 1) {
            throw new InvalidInputException(format.typeName() + " tensor " + name + ": shape " + rows + "×" + cols
                    + " must have at least one row and one column");
        }
        if (cols % format.groupSize() != 0) {
            throw new InvalidInputException(format.typeName() + " tensor " + name + ": " + cols
                    + " columns are not a multiple of the group size " + format.groupSize());
        }
        long packedBytes = rows * format.packedBytesPerRow(cols);
        if (packed.byteSize() != packedBytes) {
            throw new InvalidInputException(format.typeName() + " tensor " + name + " (" + rows + "×" + cols + "): packed codes need "
                    + packedBytes + " bytes (" + rows + "×" + format.packedWordsPerRow(cols) + " uint32), got " + packed.byteSize());
        }
        long groups = (long) rows * format.groupsPerRow(cols);
        if (scales.byteSize() != groups) {
            throw new InvalidInputException(format.typeName() + " tensor " + name + " (" + rows + "×" + cols + "): scales need "
                    + groups + " bytes (" + rows + "×" + format.groupsPerRow(cols) + " " + format.scale() + "), got " + scales.byteSize());
        }
    }

    /** Groups per row. */
    public int groupsPerRow() {
        return format.groupsPerRow(cols);
    }

    /** The scale byte of group {@code group} of row {@code row}. */
    public int scaleByte(int row, int group) {
        return scales.get(ValueLayout.JAVA_BYTE, (long) row * groupsPerRow() + group) & 0xff;
    }

    /** The scale of group {@code group} of row {@code row}, as a float (exact). */
    public float scale(int row, int group) {
        return format.scale().value(scaleByte(row, group));
    }

    /** The code of element (row, col). */
    public int code(int row, int col) {
        long i = (long) row * cols + col;
        int b = packed.get(ValueLayout.JAVA_BYTE, format.bits() == 8 ? i : i >>> 1) & 0xff;
        return format.bits() == 8 ? b : (b >>> (4 * (int) (i & 1))) & 0xf;
    }
}
