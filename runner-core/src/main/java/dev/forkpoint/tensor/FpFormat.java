package dev.forkpoint.tensor;

/**
 * MLX's floating-point quantisation formats (mlx/ops.cpp {@code fp_quantize} / {@code fp_dequantize}): every element is
 * a small-float code, every group of {@link #groupSize()} consecutive elements of a row shares one scale byte, and the
 * element stands for value(code) · value(scale), a product that is exact in float32 (no bias term, no rounding):
 * <ul>
 *   <li>{@link #MXFP4}: {@link MiniFloat#E2M1} codes, 8 per uint32 (element 2j in the low nibble of byte j, 2j+1 in
 *       the high one), an {@link MiniFloat#E8M0} scale per 32;</li>
 *   <li>{@link #NVFP4}: E2M1 codes, an {@link MiniFloat#E4M3} scale per 16 (MLX's optional global scale, a separate
 *       tensor, is not part of this format);</li>
 *   <li>{@link #MXFP8}: {@link MiniFloat#E4M3} codes, one byte each (4 per uint32), an E8M0 scale per 32.</li>
 * </ul>
 */
public enum FpFormat implements MlxFormat {
    MXFP4(MlxQuantMode.MXFP4, MiniFloat.E2M1, MiniFloat.E8M0, 32, 6f),
    NVFP4(MlxQuantMode.NVFP4, MiniFloat.E2M1, MiniFloat.E4M3, 16, 6f),
    MXFP8(MlxQuantMode.MXFP8, MiniFloat.E4M3, MiniFloat.E8M0, 32, 448f);

    private final MlxQuantMode mode;
    private final MiniFloat element;
    private final MiniFloat scale;
    private final int groupSize;
    private final float maxElement;

    FpFormat(MlxQuantMode mode, MiniFloat element, MiniFloat scale, int groupSize, float maxElement) {
        this.mode = mode;
        this.element = element;
        this.scale = scale;
        this.groupSize = groupSize;
        this.maxElement = maxElement;
    }

    /** The format of a floating-point mode; AFFINE has none. */
    public static FpFormat of(MlxQuantMode mode) {
        return switch (mode) {
            case MXFP4 -> MXFP4;
            case NVFP4 -> NVFP4;
            case MXFP8 -> MXFP8;
            case AFFINE -> throw new IllegalArgumentException("affine is not a floating-point quantisation mode");
        };
    }

    public MlxQuantMode mode() { return mode; }

    /** The encoding of the element codes. */
    public MiniFloat element() { return element; }

    /** The encoding of the per-group scale bytes. */
    public MiniFloat scale() { return scale; }

    public int bits() { return element.bits(); }

    public int groupSize() { return groupSize; }

    /** The largest element magnitude (6 for E2M1, 448 for E4M3): MLX's quantiser maps a group's largest |w| to it. */
    public float maxElement() { return maxElement; }

    /** "mxfp4", "nvfp4", "mxfp8". */
    public String typeName() { return mode.configName(); }
}
