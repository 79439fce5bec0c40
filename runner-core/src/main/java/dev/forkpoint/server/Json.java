package dev.forkpoint.server;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import io.javalin.http.Context;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collection;
import java.util.Map;

/**
 * JSON for every API: one strict {@link ObjectMapper} and request-body binding whose failures are 400s that name the
 * field and the value. Strict means no silent coercion: a number where a string belongs (or the reverse), a float
 * where an integer belongs, a scalar where an object belongs are all refused. Unknown fields are ignored (clients
 * send extensions).
 */
public final class Json {
    public static final ObjectMapper MAPPER = JsonMapper.builder()
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    static {
        for (LogicalType t : new LogicalType[] {LogicalType.Textual, LogicalType.Boolean, LogicalType.Integer, LogicalType.Float}) {
            var c = MAPPER.coercionConfigFor(t);
            for (CoercionInputShape s : new CoercionInputShape[] {CoercionInputShape.Integer, CoercionInputShape.Float,
                    CoercionInputShape.Boolean, CoercionInputShape.String, CoercionInputShape.EmptyString}) {
                c.setCoercion(s, CoercionAction.Fail);
            }
        }
        // an integer is a fine value for a float field
        MAPPER.coercionConfigFor(LogicalType.Float).setCoercion(CoercionInputShape.Integer, CoercionAction.TryConvert);
    }

    private Json() {}

    /** The request body as a JSON tree: 400 for an empty body or malformed JSON (with line and column), 413 if too large. */
    public static JsonNode tree(Context ctx) {
        return parse(RequestBody.bytes(ctx));
    }

    /** The request body bound to {@code type} (a record with {@code @JsonProperty} names); 400 naming field and value. */
    public static <T> T read(Context ctx, Class<T> type) {
        JsonNode tree = RequestBody.tree(ctx);
        if (!tree.isObject()) throw new BadFieldException("", "request body must be a JSON object, got " + describe(tree));
        return bind(tree, type);
    }

    /** Binds a parsed tree (or part of one) to {@code type}; a mismatch is a {@link BadFieldException} naming the path. */
    public static <T> T bind(JsonNode tree, Class<T> type) {
        try {
            return MAPPER.treeToValue(tree, type);
        } catch (MismatchedInputException e) {
            String path = path(e);
            JsonNode value = at(tree, e);
            throw new BadFieldException(path, "field '" + path + "' must be " + expected(e.getTargetType())
                    + ", got " + (value == null ? "something else" : describe(value)));
        } catch (JsonMappingException e) {
            String path = path(e);
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof dev.forkpoint.InvalidInputException i) throw i;
            throw new BadFieldException(path, "field '" + path + "' is invalid: " + plain(e.getOriginalMessage()));
        } catch (JsonProcessingException e) {
            throw new BadFieldException("", "request body is invalid: " + plain(e.getOriginalMessage()));
        }
    }

    static JsonNode parse(byte[] body) {
        if (body.length == 0) throw new BadFieldException("", "request body is empty; expected a JSON object");
        try {
            JsonNode n = MAPPER.readTree(body);
            if (n == null || n.isMissingNode()) throw new BadFieldException("", "request body is empty; expected a JSON object");
            return n;
        } catch (JacksonException e) {
            var loc = e.getLocation();
            throw new BadFieldException("", "request body is not valid JSON: " + plain(e.getOriginalMessage())
                    + (loc == null ? "" : " (line " + loc.getLineNr() + ", column " + loc.getColumnNr() + ")"));
        } catch (java.io.CharConversionException e) {
            // Jackson detects UTF-8/16/32 from the first bytes; bytes that are no text in that encoding end up here
            throw new BadFieldException("", "request body is not valid JSON text (UTF-8 expected): " + e.getMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A Jackson message in the client's words: the parser's limits ("from `StreamReadConstraints…`") and Java type
     * names ({@code `com.fasterxml.jackson.databind.JsonNode`}, {@code `java.lang.String`}) are internals of this server,
     * not of the request, so they are dropped or said as JSON types.
     */
    static String plain(String message) {
        if (message == null) return "malformed";
        String m = message.replaceAll("\\s*\\(from `[^`]*`\\)", "").replaceAll(",?\\s*from `[^`]*`", "")
                .replaceAll("\\s*\\(through reference chain:[^)]*\\)", "");
        java.util.regex.Matcher t = java.util.regex.Pattern.compile("`([A-Za-z0-9_.$\\[\\]<>]+)`").matcher(m);
        StringBuilder out = new StringBuilder();
        while (t.find()) t.appendReplacement(out, java.util.regex.Matcher.quoteReplacement(jsonType(t.group(1))));
        t.appendTail(out);
        return out.toString().replace("StreamReadConstraints", "the parser's limits");
    }

    private static String jsonType(String javaType) {
        String simple = javaType.substring(javaType.lastIndexOf('.') + 1).replace("$", ".");
        return switch (simple) {
            case "String" -> "string";
            case "Integer", "int", "Long", "long", "Short", "short", "BigInteger" -> "integer";
            case "Double", "double", "Float", "float", "BigDecimal", "Number" -> "number";
            case "Boolean", "boolean" -> "boolean";
            case "JsonNode", "ObjectNode", "Object" -> "JSON value";
            case "ArrayNode", "List", "ArrayList", "Collection" -> "array";
            case "Map", "LinkedHashMap", "HashMap" -> "object";
            default -> simple.endsWith("[]") ? "array" : "object";
        };
    }

    /** The JSON text of a value. */
    public static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getSimpleName() + ": " + e.getOriginalMessage(), e);
        }
    }

    /** A short description of a JSON value for error messages: {@code string "abc"}, {@code number 12}, {@code an array}. */
    public static String describe(JsonNode v) {
        if (v == null || v.isMissingNode()) return "nothing";
        if (v.isNull()) return "null";
        if (v.isTextual()) {
            String s = v.asText();
            return "string \"" + (s.length() > 60 ? s.substring(0, 60) + "…" : s) + "\"";
        }
        if (v.isNumber()) return "number " + v.asText();
        if (v.isBoolean()) return "boolean " + v.asText();
        if (v.isArray()) return "an array";
        return "an object";
    }

    private static String path(JsonMappingException e) {
        StringBuilder sb = new StringBuilder();
        for (JsonMappingException.Reference r : e.getPath()) {
            if (r.getFieldName() != null) {
                if (!sb.isEmpty()) sb.append('.');
                sb.append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                sb.append('[').append(r.getIndex()).append(']');
            }
        }
        return sb.toString();
    }

    private static JsonNode at(JsonNode tree, JsonMappingException e) {
        JsonNode n = tree;
        for (JsonMappingException.Reference r : e.getPath()) {
            if (n == null) return null;
            n = r.getFieldName() != null ? n.get(r.getFieldName()) : n.get(r.getIndex());
        }
        return n;
    }

    private static String expected(Class<?> t) {
        if (t == null) return "of another type";
        if (t == String.class || t.isEnum()) return "a string";
        if (t == Integer.class || t == int.class || t == Long.class || t == long.class) return "an integer";
        if (Number.class.isAssignableFrom(t) || t == double.class || t == float.class) return "a number";
        if (t == Boolean.class || t == boolean.class) return "a boolean";
        if (t.isArray() || Collection.class.isAssignableFrom(t)) return "an array";
        if (Map.class.isAssignableFrom(t) || t.isRecord()) return "an object";
        return "of type " + t.getSimpleName();
    }
}
