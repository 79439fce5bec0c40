package dev.forkpoint.bench;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;

import java.io.IOException;
import java.nio.file.Path;
import java.util.TreeSet;

/**
 * Why Jlama is not measured on a GGUF file. Checked by hand for this harness: com.github.tjake:jlama-core 0.8.4
 * (latest on Maven Central) resolves, its class files target Java 20 without preview features, and its Panama
 * Vector API operations run on JDK 25 with {@code --add-modules jdk.incubator.vector}. But it loads Hugging Face
 * checkpoints (config.json, tokenizer.json, safetensors in F32/F16/BF16 or its own Q4/I8 quantisation), not GGUF;
 * this harness has no exporter to that layout, and for GGUF's quantised blocks any export would re-quantise the
 * weights, so Jlama would not run the same weights. The report says so instead of giving numbers.
 */
final class Jlama {
    static final String ENGINE = "jlama";
    static final String STATUS = "not comparable on this format";

    private Jlama() {}

    /** The reason, naming the file's matrix types. */
    static String reason(Path gguf) {
        var types = new TreeSet<String>();
        try (GgufFile file = GgufFile.open(gguf)) {
            for (GgufTensor t : file.tensors()) if (t.shape().length == 2) types.add(t.type().name());
        } catch (IOException | RuntimeException e) {
            types.add("unreadable: " + e.getMessage());
        }
        boolean floatOnly = types.stream().allMatch(t -> t.equals("F32") || t.equals("F16") || t.equals("BF16"));
        return "Jlama (com.github.tjake:jlama-core 0.8.4, runs on JDK 25 with the Vector API incubator) reads Hugging Face "
                + "safetensors checkpoints, not GGUF; this file's matrices are " + String.join(", ", types) + ". "
                + (floatOnly ? "The same weights could be exported to safetensors with config.json and tokenizer.json; this harness does not do that yet."
                             : "Jlama cannot hold these quantised blocks as they are (its own Q4/I8 formats differ), so it would run different weights.");
    }
}
