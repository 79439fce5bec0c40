package dev.forkpoint.server;

import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.sampling.SamplingOptions;

import java.util.Map;
import java.util.Set;

/**
 * Ollama's {@code options} object: sampling options (names, defaults and validation of {@link SamplingOptions}),
 * {@code num_ctx} (0 or absent = the model's default) and {@code num_batch}. Ollama options that do not change the
 * output on this runner (GPU placement, mmap, threads, {@code num_keep}) are accepted and ignored; options that would
 * change it but are not implemented ({@code mirostat} ≠ 0, {@code typical_p} ≠ 1, {@code tfs_z} ≠ 1) and unknown names
 * are refused (400, naming the option), never silently ignored.
 *
 * @param numBatch {@link GenerationRequest#NUM_BATCH_DEFAULT} when not given
 */
public record OllamaOptions(SamplingOptions sampling, int numCtx, int numBatch) {
    private static final Set<String> IGNORED = Set.of("num_keep", "num_gpu", "main_gpu", "use_mmap", "use_mlock",
            "num_thread", "numa", "low_vram", "f16_kv", "vocab_only", "logits_all", "penalize_newline", "mirostat_tau",
            "mirostat_eta", "embedding_only");

    /** Parses an options object (null = all defaults); 400 naming the option on a bad name, type or value. */
    public static OllamaOptions parse(Map<String, Object> options) {
        if (options == null) options = Map.of();
        for (Map.Entry<String, Object> e : options.entrySet()) {
            String k = e.getKey();
            Object v = e.getValue();
            if (SamplingOptions.OPTION_NAMES.contains(k) || IGNORED.contains(k) || k.equals("num_ctx") || k.equals("num_batch")) continue;
            switch (k) {
                case "mirostat" -> requireNeutral(k, v, 0, "mirostat sampling is not supported");
                case "typical_p" -> requireNeutral(k, v, 1, "locally typical sampling is not supported");
                case "tfs_z" -> requireNeutral(k, v, 1, "tail-free sampling is not supported");
                default -> throw new BadFieldException("options." + k, "unknown option '" + k + "'");
            }
        }
        SamplingOptions sampling;
        try {
            sampling = SamplingOptions.fromMap(options);
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new BadFieldException("options", e.getMessage());
        }
        int numCtx = integer(options, "num_ctx", 0);
        if (numCtx < 0) throw new BadFieldException("options.num_ctx", "option num_ctx must be >= 0 (0 = the model's default), got " + numCtx);
        int numBatch = integer(options, "num_batch", GenerationRequest.NUM_BATCH_DEFAULT);
        if (numBatch != GenerationRequest.NUM_BATCH_DEFAULT && numBatch < 1) {
            throw new BadFieldException("options.num_batch", "option num_batch must be >= 1, got " + numBatch);
        }
        return new OllamaOptions(sampling, numCtx, numBatch);
    }

    /**
     * The options of a request to a store model with a params layer: the layer's values under the request's own
     * ({@code parsed} is the request's alone, returned as is when the model has none).
     */
    public static OllamaOptions withDefaults(Map<String, Object> modelParams, Map<String, Object> request, OllamaOptions parsed) {
        if (modelParams == null || modelParams.isEmpty()) return parsed;
        Map<String, Object> merged = new java.util.HashMap<>(modelParams);
        if (request != null) merged.putAll(request);
        return parse(merged);
    }

    private static void requireNeutral(String k, Object v, double neutral, String why) {
        if (v == null) return;
        if (!(v instanceof Number n)) throw new BadFieldException("options." + k, "option " + k + " must be a number, got " + v);
        if (n.doubleValue() != neutral) {
            throw new BadFieldException("options." + k, "option " + k + " must be " + (long) neutral + ": " + why + ", got " + n);
        }
    }

    private static int integer(Map<String, Object> options, String k, int absent) {
        Object v = options.get(k);
        if (v == null) return absent;
        if (v instanceof Integer i) return i;
        if (v instanceof Long l && l == (int) (long) l) return (int) (long) l;
        if (v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue()) && Math.abs(n.doubleValue()) <= Integer.MAX_VALUE) {
            return (int) n.doubleValue();
        }
        throw new BadFieldException("options." + k, "option " + k + " must be an integer, got " + (v instanceof String s ? "string \"" + s + "\"" : v));
    }
}
