package dev.forkpoint.tensor;

import dev.forkpoint.InvalidInputException;

import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The quantisation modes MLX defines, under the names config.json's {@code quantization.mode} gives them, with the
 * group size and bits MLX uses when a configuration leaves them out (mlx/ops.cpp {@code quantization_params_from_mode},
 * the same table as mlx.nn's and mlx-lm's {@code _defaults_for_mode}). The floating-point modes allow only their own
 * group size and bits (MLX's {@code fp_quantize} and {@code fp_dequantize} refuse any other).
 */
public enum MlxQuantMode {
    AFFINE("affine", 4, 64),
    MXFP4("mxfp4", 4, 32),
    NVFP4("nvfp4", 4, 16),
    MXFP8("mxfp8", 8, 32);

    private final String configName;
    private final int defaultBits;
    private final int defaultGroupSize;

    MlxQuantMode(String configName, int defaultBits, int defaultGroupSize) {
        this.configName = configName;
        this.defaultBits = defaultBits;
        this.defaultGroupSize = defaultGroupSize;
    }

    /** The mode's name in config.json and MLX's API ("affine", "mxfp4", "nvfp4", "mxfp8"). */
    public String configName() {
        return configName;
    }

    public int defaultBits() {
        return defaultBits;
    }

    public int defaultGroupSize() {
        return defaultGroupSize;
    }

    /** The mode named {@code name} exactly (MLX's names are lower case), if there is one. */
    public static Optional<MlxQuantMode> parse(String name) {
        for (MlxQuantMode m : values()) if (m.configName.equals(name)) return Optional.of(m);
        return Optional.empty();
    }

    /** "affine, mxfp4, nvfp4, mxfp8". */
    public static String names() {
        return Arrays.stream(values()).map(MlxQuantMode::configName).collect(Collectors.joining(", "));
    }

    /**
     * The format of this mode at {@code bits} and {@code groupSize}: an {@link AffineFormat}, or the {@link FpFormat}
     * of a floating-point mode, which must be given its own bits and group size. Throws {@link InvalidInputException}
     * saying what the mode supports otherwise.
     */
    public MlxFormat format(int bits, int groupSize) {
        if (this == AFFINE) return new AffineFormat(bits, groupSize);
        FpFormat f = FpFormat.of(this);
        if (bits != f.bits() || groupSize != f.groupSize()) {
            throw new InvalidInputException(configName + " quantisation requires bits " + f.bits() + " and group size "
                    + f.groupSize() + ", got bits " + bits + " and group size " + groupSize);
        }
        return f;
    }
}
