package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;

import java.util.List;

/**
 * MLX's affine quantisation of a matrix row: {@code groupSize} consecutive inputs share one scale s and one bias b,
 * each element is a {@code bits}-bit unsigned code q and stands for s·q + b. The codes of a row form one continuous
 * little-endian bit stream (element i occupies bits [i·bits, (i+1)·bits) of the row, least significant bit first,
 * read from the row's bytes or, equally, its little-endian uint32 words); every 8 codes fill exactly {@code bits}
 * bytes. Only the values MLX supports are accepted: bits ∈ {2, 3, 4, 5, 6, 8}, group size ∈ {32, 64, 128}.
 */
public record AffineFormat(int bits, int groupSize) implements MlxFormat {
    /** The supported code widths. */
    public static final List<Integer> BITS = List.of(2, 3, 4, 5, 6, 8);
    /** The supported group sizes. */
    public static final List<Integer> GROUP_SIZES = List.of(32, 64, 128);

    public AffineFormat {
        if (!BITS.contains(bits)) {
            throw new InvalidInputException("affine quantisation bits " + bits + " is not supported; supported bits: " + BITS);
        }
        if (!GROUP_SIZES.contains(groupSize)) {
            throw new InvalidInputException("affine quantisation group size " + groupSize
                    + " is not supported; supported group sizes: " + GROUP_SIZES);
        }
    }

    /** The largest code, 2^bits − 1. */
    public int maxCode() {
        return (1 << bits) - 1;
    }

    public MlxQuantMode mode() {
        return MlxQuantMode.AFFINE;
    }

    /** "affine 4-bit g64": the name matrices of this format report as their type. */
    public String typeName() {
        return "affine " + bits + "-bit g" + groupSize;
    }
}
