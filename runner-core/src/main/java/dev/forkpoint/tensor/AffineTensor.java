package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A matrix quantised in MLX's affine layout (a quantised Linear or Embedding of an mlx-community model): {@code rows}
 * outputs of {@code cols} inputs; {@code packed} holds each row's codes as {@link AffineFormat} describes
 * (rows · cols · bits / 8 bytes, MLX's uint32 {@code weight} [rows, cols·bits/32] little-endian), {@code scales} and
 * {@code biases} one value per group, row-major [rows, cols / groupSize], as {@code scaleType} (F32, F16 or BF16)
 * little-endian. Element (r, c) is scale[r, c/g] · q(r, c) + bias[r, c/g].
 * <p>The constructor checks every size and throws {@link InvalidInputException} naming the tensor with the
 * expected and the actual size, so a matrix that exists can be read without further bounds worries.
 */
public record AffineTensor(String name, int rows, int cols, AffineFormat format, MemorySegment packed,
                           GgmlType scaleType, MemorySegment scales, MemorySegment biases) implements WeightSource {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public AffineTensor {
        if (name == null || format == null || packed == null || scaleType == null || scales == null || biases == null) {
            throw new InvalidInputException("affine tensor " + name + ": name, format, packed codes, scale type, scales and biases are all required");
        }
        if (rows < 1 || cols < 1) {
            throw new InvalidInputException("affine tensor " + name + ": shape " + rows + "×" + cols + " must have at least one row and one column");
        }
        if (cols % format.groupSize() != 0) {
            throw new InvalidInputException("affine tensor " + name + ": " + cols + " columns are not a multiple of the group size "
                    + format.groupSize());
        }
        if (scaleType != GgmlType.F32 && scaleType != GgmlType.F16 && scaleType != GgmlType.BF16) {
            throw new InvalidInputException("affine tensor " + name + ": scales of type " + scaleType
                    + " are not supported; supported scale types: F32, F16, BF16");
        }
        long packedBytes = rows * format.packedBytesPerRow(cols);
        if (packed.byteSize() != packedBytes) {
            throw new InvalidInputException("affine tensor " + name + " (" + rows + "×" + cols + ", " + format.typeName()
                    + "): packed codes need " + packedBytes + " bytes (" + rows + "×" + format.packedWordsPerRow(cols)
                    + " uint32), got " + packed.byteSize());
        }
        long groups = (long) rows * format.groupsPerRow(cols);
        long groupBytes = groups * scaleType.blockBytes();
        if (scales.byteSize() != groupBytes) {
            throw new InvalidInputException("affine tensor " + name + ": scales need " + groups + " " + scaleType + " values ("
                    + groupBytes + " bytes), got " + scales.byteSize() + " bytes");
        }
        if (biases.byteSize() != groupBytes) {
            throw new InvalidInputException("affine tensor " + name + ": biases need " + groups + " " + scaleType + " values ("
                    + groupBytes + " bytes), got " + biases.byteSize() + " bytes");
        }
    }

    /** Groups per row. */
    public int groupsPerRow() {
        return format.groupsPerRow(cols);
    }

    /** The scale of group {@code group} of row {@code row}, as a float. */
    public float scale(int row, int group) {
        return read(scales, (long) row * groupsPerRow() + group);
    }

    /** The bias of group {@code group} of row {@code row}, as a float. */
    public float bias(int row, int group) {
        return read(biases, (long) row * groupsPerRow() + group);
    }

    private float read(MemorySegment s, long index) {
        return switch (scaleType) {
            case F16 -> Float.float16ToFloat(s.get(I16, 2 * index));
            case BF16 -> BFloat16.toFloat(s.get(I16, 2 * index));
            default -> s.get(F32, 4 * index);
        };
    }
}
