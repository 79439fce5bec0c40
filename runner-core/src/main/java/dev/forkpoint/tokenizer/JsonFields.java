package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.format.ModelFormatException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Typed access to the fields of one JSON file; every problem becomes a {@link ModelFormatException} naming the
 * file and the field's path (such as {@code model.merges[3]}).
 */
final class JsonFields {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    final Path file;

    JsonFields(Path file) {
        this.file = file;
    }

    /** The parsed file. */
    JsonNode read() {
        try {
            return MAPPER.readTree(Files.readString(file));
        } catch (JsonProcessingException e) {
            var at = e.getLocation();
            throw new ModelFormatException(file, "JSON", "is not valid JSON" + (at == null ? "" : " (line " + at.getLineNr()
                    + ", column " + at.getColumnNr() + ")") + ": " + e.getOriginalMessage());
        } catch (java.nio.charset.MalformedInputException e) {
            throw new ModelFormatException(file, "JSON", "is not UTF-8 text");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    ModelFormatException error(String field, String problem) {
        return new ModelFormatException(file, "field " + field, problem);
    }

    static String describe(JsonNode n) {
        if (n == null || n.isMissingNode()) return "nothing";
        String text = n.toString();
        return n.getNodeType().name().toLowerCase() + " " + (text.length() > 60 ? text.substring(0, 60) + "…" : text);
    }

    /** The field's node, or null when absent or JSON null. */
    static JsonNode optional(JsonNode parent, String name) {
        JsonNode n = parent == null ? null : parent.get(name);
        return n == null || n.isNull() ? null : n;
    }

    JsonNode object(JsonNode parent, String name, String where) {
        JsonNode n = optional(parent, name);
        if (n == null || !n.isObject()) throw error(where, n == null ? "missing" : "expected an object, found " + describe(n));
        return n;
    }

    JsonNode array(JsonNode parent, String name, String where) {
        JsonNode n = optional(parent, name);
        if (n == null || !n.isArray()) throw error(where, n == null ? "missing" : "expected an array, found " + describe(n));
        return n;
    }

    String string(JsonNode parent, String name, String where) {
        JsonNode n = optional(parent, name);
        if (n == null) throw error(where, "missing");
        return text(n, where);
    }

    String optionalString(JsonNode parent, String name, String where) {
        JsonNode n = optional(parent, name);
        return n == null ? null : text(n, where);
    }

    String text(JsonNode n, String where) {
        if (!n.isTextual()) throw error(where, "expected a string, found " + describe(n));
        return n.textValue();
    }

    boolean bool(JsonNode parent, String name, boolean fallback, String where) {
        JsonNode n = optional(parent, name);
        if (n == null) return fallback;
        if (!n.isBoolean()) throw error(where, "expected true or false, found " + describe(n));
        return n.booleanValue();
    }

    Boolean optionalBool(JsonNode parent, String name, String where) {
        return optional(parent, name) == null ? null : bool(parent, name, false, where);
    }

    int integer(JsonNode n, String where) {
        if (n == null) throw error(where, "missing");
        if (!n.canConvertToInt() || !n.isIntegralNumber() || n.intValue() < 0) {
            throw error(where, "expected a non-negative integer, found " + describe(n));
        }
        return n.intValue();
    }

    /** Token ids above this are refused: no vocabulary is that large, and the id sizes tables. */
    static final int MAX_TOKEN_ID = (1 << 24) - 1;

    /** A token id: an integer from 0 to {@link #MAX_TOKEN_ID}. */
    int tokenId(JsonNode n, String where) {
        int id = integer(n, where);
        if (id > MAX_TOKEN_ID) throw error(where, "token id " + id + " is implausibly large (limit " + MAX_TOKEN_ID + ")");
        return id;
    }

    int integer(JsonNode parent, String name, String where) {
        return integer(optional(parent, name), where);
    }
}
