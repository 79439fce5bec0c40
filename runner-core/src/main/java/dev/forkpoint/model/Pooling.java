package dev.forkpoint.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.format.JsonFile;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * How a sequence's final hidden states become one embedding vector: the model's own pooling where its files name one
 * (GGUF {@code <arch>.pooling_type}: 1 mean, 2 cls, 3 last; a Hugging Face folder's sentence-transformers
 * {@code modules.json} → its Pooling module's {@code config.json}: {@code pooling_mode_mean_tokens},
 * {@code pooling_mode_cls_token}, {@code pooling_mode_lasttoken}), else {@link Kind#LAST} — the last token's state,
 * the one a causal decoder has seen the whole input with. A pooling Forkpoint does not compute (GGUF rank, the
 * sentence-transformers max / mean-sqrt-len / weighted-mean modes or several modes at once) is kept as
 * {@link Kind#UNSUPPORTED}: the model still generates, and an embedding request is refused naming it.
 *
 * @param kind   the pooling
 * @param source where it came from, for messages and {@code show} ("llama.pooling_type = 1", "default: decoder model")
 */
public record Pooling(Kind kind, String source) {
    public enum Kind {
        /** The mean of every token's state. */
        MEAN,
        /** The first token's state. */
        CLS,
        /** The last token's state. */
        LAST,
        /** A pooling named by the model that is not computed here ({@link #source()} says which). */
        UNSUPPORTED;

        public String label() { return name().toLowerCase(java.util.Locale.ROOT); }
    }

    /** The default of a decoder model whose files name no pooling. */
    public static final Pooling DEFAULT = new Pooling(Kind.LAST, "default for a decoder model: last token");

    /** The pooling of a GGUF file: {@code <arch>.pooling_type} (llama.cpp's values), else {@link #DEFAULT}. */
    static Pooling fromGguf(GgufFile f, String arch) {
        String key = arch + ".pooling_type";
        if (!f.has(key)) return DEFAULT;
        int type = f.getInt(key);
        String source = key + " = " + type;
        return switch (type) {
            case -1, 0 -> new Pooling(Kind.LAST, source + " (none): last token, the default for a decoder model");
            case 1 -> new Pooling(Kind.MEAN, source + " (mean)");
            case 2 -> new Pooling(Kind.CLS, source + " (cls)");
            case 3 -> new Pooling(Kind.LAST, source + " (last)");
            case 4 -> new Pooling(Kind.UNSUPPORTED, source + " (rank: a reranker's classification head)");
            default -> throw new ModelFormatException(f.path(), "metadata " + key, "must be -1 … 4 (llama.cpp's pooling types), found " + type);
        };
    }

    /**
     * The pooling of a Hugging Face folder: the sentence-transformers Pooling module that {@code modules.json} lists
     * (or {@code 1_Pooling/config.json} without a modules.json), else {@link #DEFAULT}.
     */
    static Pooling fromFolder(Path folder) throws IOException {
        Path modules = folder.resolve("modules.json");
        Path config = null;
        if (Files.isRegularFile(modules)) {
            JsonNode list = JsonFile.read(modules, "modules.json");
            if (list == null || !list.isArray()) throw new ModelFormatException(modules, "modules.json", "must be an array of modules");
            for (JsonNode m : list) {
                JsonNode type = m == null ? null : m.get("type");
                if (type != null && type.isTextual() && type.asText().endsWith(".Pooling")) {
                    JsonNode path = m.get("path");
                    if (path == null || !path.isTextual()) throw new ModelFormatException(modules, "modules.json", "the Pooling module has no path");
                    Path dir = folder.resolve(path.asText()).normalize();
                    if (!dir.startsWith(folder.normalize())) throw new ModelFormatException(modules, "modules.json", "the Pooling module's path leaves the folder: " + path.asText());
                    config = dir.resolve("config.json");
                    break;
                }
            }
            if (config == null) return DEFAULT;
        } else {
            config = folder.resolve("1_Pooling").resolve("config.json");
        }
        if (!Files.isRegularFile(config)) return DEFAULT;
        String name = folder.normalize().relativize(config.normalize()).toString();
        JsonNode c = JsonFile.read(config, name);
        if (c == null || !c.isObject()) throw new ModelFormatException(config, name, "must be a JSON object");
        List<String> modes = new ArrayList<>();
        for (var it = c.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (k.startsWith("pooling_mode_") && c.get(k).asBoolean(false)) modes.add(k);
        }
        String source = name + " " + (modes.isEmpty() ? "(no pooling_mode_* set)" : String.join(" + ", modes));
        if (modes.size() != 1) {
            return modes.isEmpty() ? new Pooling(Kind.LAST, source + ": last token, the default for a decoder model")
                    : new Pooling(Kind.UNSUPPORTED, source + " (several modes concatenated)");
        }
        return switch (modes.getFirst()) {
            case "pooling_mode_mean_tokens" -> new Pooling(Kind.MEAN, source);
            case "pooling_mode_cls_token" -> new Pooling(Kind.CLS, source);
            case "pooling_mode_lasttoken" -> new Pooling(Kind.LAST, source);
            default -> new Pooling(Kind.UNSUPPORTED, source);
        };
    }
}
