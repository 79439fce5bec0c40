package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.model.ModelConfig;

/**
 * A Qwen3.5 hybrid's config.json ({@code qwen3_5}, {@code qwen3_5_moe}: Gated DeltaNet and gated attention layers,
 * dense or mixture-of-experts feed-forwards) as the converter needs it: the language model's sizes as the loader reads
 * them ({@link ModelConfig#fromHf}: {@code text_config}, or the top level when there is none, as mlx-lm allows), by
 * which the loader's table of the hybrid's weights is sized ({@link dev.forkpoint.model.HfLayout#weights}); and the
 * source JSON itself, which an MLX folder keeps unchanged but for the {@code quantization} block.
 *
 * @param source the config.json as read (never modified)
 * @param model  the loader's reading of it
 */
record HybridConfig(ObjectNode source, ModelConfig model) {

    /**
     * mlx-lm's module path ({@code language_model.model.…}) for a module named {@code canonical} (its name with the
     * language model's prefix made {@code model.}, {@link ConfigJson#canonicalName}).
     */
    static String mlxLmPath(String canonical) {
        if (canonical.startsWith("model.") || canonical.equals("lm_head") || canonical.startsWith("lm_head.")) return "language_model." + canonical;
        return canonical;
    }

    /** Tensors that are not the language model's: the vision tower and the multi-token-prediction head. */
    static boolean ignored(String name) {
        return name.startsWith("model.visual.") || name.startsWith("visual.") || name.startsWith("vision_tower.")
                || name.startsWith("mtp.") || name.startsWith("model.mtp.");
    }

    /** The hybrid read as {@code c} from config.json, whose JSON {@code root} is kept as the source to carry over. */
    static HybridConfig of(ObjectNode root, ModelConfig c) {
        return new HybridConfig(root.deepCopy(), c);
    }

    /** The source config.json with {@code quantization} (and mlx-lm's copy {@code quantization_config}) when non-null. */
    ObjectNode toJson(ObjectNode quantization) {
        ObjectNode o = source.deepCopy();
        o.remove("quantization");
        o.remove("quantization_config");
        return ConfigJson.withQuantization(o, quantization);
    }
}
