package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.kvcache.KvElementType;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The Ollama server settings {@code forkpoint serve} reads from the environment (a flag wins over its variable; the
 * variables' values as Ollama reads them: spaces and quotes around them dropped, empty = unset). Each field is null
 * when its variable is unset.
 *
 * @param host            {@code OLLAMA_HOST}: address and port ({@code --host}, {@code --port})
 * @param contextLength   {@code OLLAMA_CONTEXT_LENGTH}: the default num_ctx, 0 = Ollama's 4096 ({@code --num-ctx})
 * @param numParallel     {@code OLLAMA_NUM_PARALLEL}: sequences run together per model, 0 = the default ({@code --parallel})
 * @param maxQueue        {@code OLLAMA_MAX_QUEUE}: requests waiting per model ({@code --queue-limit})
 * @param keepAlive       {@code OLLAMA_KEEP_ALIVE}: how long a store model stays loaded, negative = forever ({@code --keep-alive})
 * @param kvCacheType     {@code OLLAMA_KV_CACHE_TYPE}: f16, q8_0 or q4_0 (or Forkpoint's f32) ({@code --kv-type})
 * @param models          {@code OLLAMA_MODELS}: the store's directory (read by the store itself; no flag)
 * @param origins         {@code OLLAMA_ORIGINS}: browser origins allowed, comma-separated ({@code --origins} adds to them)
 * @param maxLoadedModels {@code OLLAMA_MAX_LOADED_MODELS}: store models loaded at once, 0 = no limit ({@code --max-loaded-models})
 * @param unsupported     the OLLAMA_* variables that are set but that Forkpoint does not read, sorted
 */
public record OllamaEnvironment(OllamaHost host, Integer contextLength, Integer numParallel, Integer maxQueue,
                                Duration keepAlive, KvElementType kvCacheType, String models, String origins,
                                Integer maxLoadedModels, List<String> unsupported) {
    public static final String HOST = OllamaHost.VARIABLE, CONTEXT_LENGTH = "OLLAMA_CONTEXT_LENGTH",
            NUM_PARALLEL = "OLLAMA_NUM_PARALLEL", MAX_QUEUE = "OLLAMA_MAX_QUEUE", KEEP_ALIVE = "OLLAMA_KEEP_ALIVE",
            KV_CACHE_TYPE = "OLLAMA_KV_CACHE_TYPE", MODELS = "OLLAMA_MODELS", ORIGINS = "OLLAMA_ORIGINS",
            MAX_LOADED_MODELS = "OLLAMA_MAX_LOADED_MODELS";

    /** The variables Forkpoint reads, in the README's order. */
    public static final List<String> SUPPORTED = List.of(HOST, CONTEXT_LENGTH, NUM_PARALLEL, MAX_QUEUE, KEEP_ALIVE,
            KV_CACHE_TYPE, MODELS, ORIGINS, MAX_LOADED_MODELS);

    public OllamaEnvironment {
        unsupported = unsupported == null ? List.of() : List.copyOf(unsupported);
    }

    /** Reads {@code env}; a bad value is refused naming the variable and the value. */
    public static OllamaEnvironment from(Map<String, String> env) {
        Set<String> unsupported = new TreeSet<>();
        for (var e : env.entrySet()) {
            if (e.getKey().startsWith("OLLAMA_") && !SUPPORTED.contains(e.getKey()) && !unquote(e.getValue()).isEmpty()) unsupported.add(e.getKey());
        }
        String host = value(env, HOST);
        String keepAlive = value(env, KEEP_ALIVE);
        String kvType = value(env, KV_CACHE_TYPE);
        return new OllamaEnvironment(host == null ? null : OllamaHost.parse(host),
                count(env, CONTEXT_LENGTH, "(0 = Ollama's default 4096)"),
                count(env, NUM_PARALLEL, "(0 = the default)"),
                count(env, MAX_QUEUE, ""),
                keepAlive == null ? null : GoDuration.parse(keepAlive).orElseThrow(() -> new InvalidInputException(KEEP_ALIVE
                        + " must be seconds or a duration such as 5m, 1h30m or -1 (negative = forever), got '" + env.get(KEEP_ALIVE) + "'")),
                kvType == null ? null : kvCacheType(kvType),
                value(env, MODELS), value(env, ORIGINS),
                count(env, MAX_LOADED_MODELS, "(0 = no limit)"),
                List.copyOf(unsupported));
    }

    /** The one start-up line naming the unsupported variables that are set, or null when there are none. */
    public String unsupportedNote() {
        if (unsupported.isEmpty()) return null;
        return "note: not supported by Forkpoint, ignored: " + String.join(", ", unsupported)
                + " (supported: " + String.join(", ", SUPPORTED) + ")";
    }

    /** A value as Ollama's {@code envconfig.Var} reads it: trimmed, then quotes around it dropped. */
    static String unquote(String value) {
        if (value == null) return "";
        String s = value.strip();
        int a = 0, b = s.length();
        while (a < b && (s.charAt(a) == '"' || s.charAt(a) == '\'')) a++;
        while (b > a && (s.charAt(b - 1) == '"' || s.charAt(b - 1) == '\'')) b--;
        return s.substring(a, b);
    }

    private static String value(Map<String, String> env, String name) {
        String v = unquote(env.get(name));
        return v.isEmpty() ? null : v;
    }

    private static Integer count(Map<String, String> env, String name, String meaning) {
        String v = value(env, name);
        if (v == null) return null;
        try {
            int n = Integer.parseInt(v);
            if (n >= 0) return n;
        } catch (NumberFormatException tooLargeOrNotANumber) {
            // refused below
        }
        throw new InvalidInputException(name + " must be a whole number >= 0" + (meaning.isEmpty() ? "" : " " + meaning)
                + ", got '" + env.get(name) + "'");
    }

    /** Ollama's KV cache types, any case: f16, q8_0 and q4_0 (and Forkpoint's f32). */
    static KvElementType kvCacheType(String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "f16" -> KvElementType.F16;
            case "f32" -> KvElementType.F32;
            case "q8_0" -> KvElementType.Q8_0;
            case "q4_0" -> KvElementType.Q4_0;
            default -> throw new InvalidInputException(KV_CACHE_TYPE + " must be f16, q8_0 or q4_0 (or f32), got '" + value + "'");
        };
    }
}
