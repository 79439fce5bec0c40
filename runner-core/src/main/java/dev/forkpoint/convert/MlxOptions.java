package dev.forkpoint.convert;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.GgmlType;

/**
 * How to write an MLX folder.
 *
 * @param quantize       false: every weight stays a float (no quantization block)
 * @param format         bits and group size of the quantised matrices (when {@code quantize})
 * @param embeddingBits  bits for {@code model.embed_tokens} (same group size), or 0 for {@code format}'s bits
 * @param keepOutput     the output projection ({@code lm_head}, or the tied embedding) stays unquantised
 * @param scaleType      element type of scales and biases: F16 (default), BF16 or F32
 * @param floatType      element type of unquantised weights, or null to keep F32/F16/BF16 sources as they are
 *                       (GGUF block-quantised sources then become F16)
 */
public record MlxOptions(boolean quantize, AffineFormat format, int embeddingBits, boolean keepOutput, GgmlType scaleType,
                         GgmlType floatType) {
    public MlxOptions {
        if (scaleType != GgmlType.F16 && scaleType != GgmlType.BF16 && scaleType != GgmlType.F32) {
            throw new InvalidInputException("scale dtype must be float16, bfloat16 or float32, got " + scaleType);
        }
        if (floatType != null && floatType != GgmlType.F16 && floatType != GgmlType.BF16 && floatType != GgmlType.F32) {
            throw new InvalidInputException("dtype must be float16, bfloat16 or float32, got " + floatType);
        }
        if (embeddingBits != 0) new AffineFormat(embeddingBits, format.groupSize());
    }

    /** mlx-lm's default: 4 bits, group size 64, float16 scales, unquantised weights kept as they are. */
    public static MlxOptions defaults() {
        return new MlxOptions(true, new AffineFormat(4, 64), 0, false, GgmlType.F16, null);
    }

    public MlxOptions withFormat(int bits, int groupSize) {
        return new MlxOptions(quantize, new AffineFormat(bits, groupSize), embeddingBits, keepOutput, scaleType, floatType);
    }

    public MlxOptions withEmbeddingBits(int bits) {
        return new MlxOptions(quantize, format, bits, keepOutput, scaleType, floatType);
    }

    public MlxOptions withKeepOutput(boolean keep) {
        return new MlxOptions(quantize, format, embeddingBits, keep, scaleType, floatType);
    }

    public MlxOptions withScaleType(GgmlType type) {
        return new MlxOptions(quantize, format, embeddingBits, keepOutput, type, floatType);
    }

    public MlxOptions withFloatType(GgmlType type) {
        return new MlxOptions(quantize, format, embeddingBits, keepOutput, scaleType, type);
    }

    public MlxOptions unquantised() {
        return new MlxOptions(false, format, embeddingBits, keepOutput, scaleType, floatType);
    }

    /** "float16" → F16 (also "f16", "bf16", "f32", …). */
    public static GgmlType parseDtype(String option, String name) {
        return switch (name.toLowerCase(java.util.Locale.ROOT)) {
            case "float16", "f16", "fp16" -> GgmlType.F16;
            case "bfloat16", "bf16" -> GgmlType.BF16;
            case "float32", "f32", "fp32" -> GgmlType.F32;
            default -> throw new InvalidInputException("option " + option + " must be float16, bfloat16 or float32, got '" + name + "'");
        };
    }

    /** "float16" for F16, as Hugging Face's torch_dtype names it. */
    static String dtypeName(GgmlType t) {
        return switch (t) {
            case F16 -> "float16";
            case BF16 -> "bfloat16";
            default -> "float32";
        };
    }
}
