package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.tensor.GgmlType;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;

/**
 * How Jlama (com.github.tjake:jlama-core 0.8.4, pure Java with the Vector API incubator; runs on JDK 25) takes part
 * in {@code bench compare} on one GGUF. Jlama reads Hugging Face folders (config.json, tokenizer.json, safetensors in
 * F32/F16/BF16, or its own Q4), not GGUF. So the GGUF is exported once with
 * Forkpoint's converter ({@code forkpoint convert --to mlx --no-quantize}): F32/F16/BF16 matrices are written as they
 * are (bit-exact), and Jlama runs the same weights as the other engines. GGUF block-quantised matrices (Q4_0, Q8_0, …)
 * have no Jlama equivalent: Jlama is measured on them only when asked ({@code --jlama-requantize}), on the export
 * (dequantised to F16) as it is or quantised by Jlama to its Q4, and its row says these are not the same weights.
 * (Jlama's other quantised type, I8, is in 0.8.4's pure-Java operations an activation type only: I8 weights fail
 * with UnsupportedOperationException, so it is not offered.)
 *
 * @param measured     whether Jlama runs (false: {@code reason} says why not)
 * @param sameWeights  whether it runs exactly the GGUF's weights
 * @param weights      the worker's weights argument ({@link JlamaWorker#AS_IS} or Q4)
 * @param matrixTypes  the GGUF's matrix types, e.g. "F16" or "Q4_0, Q6_K"
 * @param engineName   the row's name
 * @param reason       why Jlama is not measured, or null
 */
record Jlama(boolean measured, boolean sameWeights, String weights, String engineName, String reason, String matrixTypes) {
    static final String ENGINE = "jlama";
    static final String STATUS = "not comparable on this format";

    /** The plan for {@code gguf}; {@code requantize} is null (default), "q4" or "f16". */
    static Jlama plan(Path gguf, String requantize) {
        String to = requantize == null ? null : switch (requantize.toLowerCase(Locale.ROOT)) {
            case "q4" -> "Q4";
            case "f16" -> "F16";
            default -> throw new InvalidInputException("--jlama-requantize " + requantize + ": expected q4 or f16 (Jlama 0.8.4 runs I8 only as an activation type)");
        };
        var types = new TreeSet<String>();
        try (GgufFile file = GgufFile.open(gguf)) {
            for (GgufTensor t : file.tensors()) if (t.shape().length == 2) types.add(t.type().name());
        } catch (IOException | RuntimeException e) {
            return new Jlama(false, false, null, ENGINE, "the GGUF's tensors could not be read: " + e.getMessage(), "");
        }
        String listed = String.join(", ", types);
        boolean floatOnly = types.stream().allMatch(t -> t.equals("F32") || t.equals("F16") || t.equals("BF16"));
        if (floatOnly && (to == null || to.equals("F16") && listed.equals("F16"))) {
            return new Jlama(true, true, JlamaWorker.AS_IS, ENGINE, null, listed);
        }
        if (to == null) {
            return new Jlama(false, false, null, ENGINE, "Jlama reads Hugging Face safetensors folders, not GGUF, and cannot hold this "
                    + "file's quantised blocks (" + listed + ") as they are: its own Q4/I8 formats differ, so it would run different "
                    + "weights. --jlama-requantize q4|f16 measures it anyway on re-quantised weights, labelled as such.", listed);
        }
        String label = ENGINE + " (re-quantised from " + listed + " to " + to + ", not the same weights)";
        return new Jlama(true, false, to.equals("F16") ? JlamaWorker.AS_IS : to, label, null, listed);
    }

    /**
     * The float type the export writes unquantised weights as: null (F32/F16/BF16 kept as they are, block-quantised
     * ones dequantised to F16) unless Jlama is to run F16 floats re-quantised from something else.
     */
    GgmlType exportFloatType() {
        return measured && !sameWeights && weights.equals(JlamaWorker.AS_IS) ? GgmlType.F16 : null;
    }

    /** What Jlama's measured row says: the weights it ran, how it was timed, and {@code modelNote} (may be null). */
    String rowNote(String modelNote) {
        String weightsNote = sameWeights ? "the same weights, exported to a Hugging Face folder (bit-exact)"
                + (List.of(matrixTypes.split(", ")).contains("F16") ? "; Jlama 0.8.4 widens F16 "
                + "matrices to F32 on its heap while loading (same values, twice the bytes per weight read)" : "")
                : "NOT the same weights: the export dequantised to F16" + (weights.equals(JlamaWorker.AS_IS) ? "" : ", quantised by Jlama to " + weights);
        return weightsNote + "; timed around Jlama's generate(): prompt = call to first streamed token (prefill and first greedy "
                + "pick), decode = from there to its return (Jlama's own timings are whole milliseconds)"
                + (modelNote == null ? "" : "; " + modelNote);
    }

    /**
     * A note when the exported config.json asks for RoPE scaling other than "linear": Jlama 0.8.4 reads only a linear
     * factor and ignores other kinds (Llama 3's "llama3"), so it computes different outputs; null otherwise.
     */
    static String ropeScalingNote(Path folder) throws IOException {
        JsonNode scaling = new ObjectMapper().readTree(folder.resolve("config.json").toFile()).path("rope_scaling");
        if (!scaling.isObject()) return null;
        String kind = scaling.path("rope_type").asText(scaling.path("type").asText(""));
        if (kind.equals("linear")) return null;
        return "Jlama 0.8.4 ignores this model's '" + kind + "' rope_scaling (it applies only 'linear'), so its outputs differ "
                + "from the other engines'; the work per token is the same";
    }
}
