package dev.forkpoint.store;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.InvalidInputException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * PARAMETER values typed as Ollama types them in a model's params layer: integers, floats (single precision, as
 * Ollama keeps them), booleans, and {@code stop} as a list of strings. The map is sorted by name, as Go writes a map.
 * A name Ollama does not know, or a value of the wrong type, is an {@link InvalidInputException} naming the parameter.
 */
public final class ModelParams {
    private static final Set<String> INTS = Set.of("num_keep", "seed", "num_predict", "top_k", "repeat_last_n", "mirostat",
            "num_ctx", "num_batch", "num_gpu", "main_gpu", "num_thread");
    private static final Set<String> FLOATS = Set.of("temperature", "top_p", "min_p", "typical_p", "repeat_penalty",
            "presence_penalty", "frequency_penalty", "tfs_z", "mirostat_tau", "mirostat_eta");
    private static final Set<String> BOOLS = Set.of("penalize_newline", "numa", "use_mmap", "use_mlock", "low_vram",
            "f16_kv", "vocab_only", "logits_all", "embedding_only");

    private ModelParams() {}

    /** Modelfile PARAMETER lines ({name, text}) typed; repeated {@code stop} lines collect into one list. */
    public static Map<String, Object> fromModelfile(List<String[]> lines) {
        Map<String, Object> out = new TreeMap<>();
        for (String[] p : lines) {
            String name = p[0], text = p[1];
            if (name.equals("stop")) {
                @SuppressWarnings("unchecked")
                List<String> stops = (List<String>) out.computeIfAbsent("stop", k -> new ArrayList<String>());
                stops.add(text);
                continue;
            }
            out.put(name, typed(name, text));
        }
        return out;
    }

    /** A JSON {@code parameters} object typed (numbers or strings holding them; stop a string or a list of strings). */
    public static Map<String, Object> fromJson(JsonNode parameters) {
        Map<String, Object> out = new TreeMap<>();
        if (parameters == null || parameters.isNull()) return out;
        if (!parameters.isObject()) throw new InvalidInputException("parameters must be an object");
        for (var it = parameters.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            String name = e.getKey();
            JsonNode v = e.getValue();
            if (name.equals("stop")) {
                List<String> stops = new ArrayList<>();
                if (v.isTextual()) stops.add(v.asText());
                else if (v.isArray()) {
                    for (JsonNode s : v) {
                        if (!s.isTextual()) throw new InvalidInputException("parameter stop must be a string or a list of strings, got " + v);
                        stops.add(s.asText());
                    }
                } else throw new InvalidInputException("parameter stop must be a string or a list of strings, got " + v);
                out.put(name, stops);
            } else if (v.isTextual()) {
                out.put(name, typed(name, v.asText()));
            } else if (v.isNumber() || v.isBoolean()) {
                out.put(name, typed(name, v.asText()));
            } else {
                throw new InvalidInputException("parameter " + name + " must be a number or a boolean, got " + v);
            }
        }
        return out;
    }

    private static Object typed(String name, String text) {
        String t = text.strip();
        try {
            if (INTS.contains(name)) {
                double d = Double.parseDouble(t);
                if (d != Math.rint(d) || Math.abs(d) > Long.MAX_VALUE / 2) throw new NumberFormatException();
                return (long) d;
            }
            if (FLOATS.contains(name)) {
                float f = Float.parseFloat(t);
                if (!Float.isFinite(f)) throw new NumberFormatException();
                return f;
            }
        } catch (NumberFormatException e) {
            throw new InvalidInputException("parameter " + name + " must be " + (INTS.contains(name) ? "an integer" : "a number")
                    + ", got '" + text + "'");
        }
        if (BOOLS.contains(name)) {
            if (t.equalsIgnoreCase("true")) return true;
            if (t.equalsIgnoreCase("false")) return false;
            throw new InvalidInputException("parameter " + name + " must be true or false, got '" + text + "'");
        }
        throw new InvalidInputException("unknown parameter '" + name + "'");
    }

    /** The params layer's JSON as Ollama writes it: keys sorted, floats in their shortest form (0.7, 0, 1.1). */
    public static byte[] toJson(Map<String, Object> params) {
        StringBuilder b = new StringBuilder("{");
        for (var e : new TreeMap<>(params).entrySet()) {
            if (b.length() > 1) b.append(',');
            b.append(quote(e.getKey())).append(':');
            Object v = e.getValue();
            if (v instanceof List<?> list) {
                b.append('[');
                for (int i = 0; i < list.size(); i++) b.append(i > 0 ? "," : "").append(quote(String.valueOf(list.get(i))));
                b.append(']');
            } else if (v instanceof Float f) {
                b.append(new java.math.BigDecimal(Float.toString(f)).stripTrailingZeros().toPlainString());
            } else if (v instanceof Double d) {
                b.append(new java.math.BigDecimal(Float.toString(d.floatValue())).stripTrailingZeros().toPlainString());
            } else {
                b.append(v);
            }
        }
        return b.append('}').toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The params layer read back (numbers as Long or Double, stop as a list). */
    public static Map<String, Object> read(JsonNode json) {
        Map<String, Object> out = new TreeMap<>();
        if (json == null || !json.isObject()) return out;
        for (var it = json.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            JsonNode v = e.getValue();
            if (v.isArray()) {
                List<String> l = new ArrayList<>();
                for (JsonNode s : v) l.add(s.asText());
                out.put(e.getKey(), l);
            } else if (v.isIntegralNumber()) {
                out.put(e.getKey(), v.asLong());
            } else if (v.isNumber()) {
                out.put(e.getKey(), v.asDouble());
            } else if (v.isBoolean()) {
                out.put(e.getKey(), v.asBoolean());
            } else if (v.isTextual()) {
                out.put(e.getKey(), v.asText());
            }
        }
        return out;
    }

    private static String quote(String s) {
        try {
            return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(s);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
