package dev.forkpoint.format;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.CharConversionException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Reads a JSON file of a model folder: malformed JSON and bytes that are no Unicode text at all (Jackson detects
 * UTF-8/16/32 from the first bytes and throws a {@link CharConversionException}, an {@link IOException}, for an
 * impossible code point) are a {@link ModelFormatException} naming the file; only a real read failure is an
 * IOException.
 */
public final class JsonFile {
    private static final ObjectMapper JSON = new ObjectMapper();

    private JsonFile() {}

    /** The file's JSON (null for an empty file); {@code field} names it in errors (e.g. "config.json"). */
    public static JsonNode read(Path file, String field) throws IOException {
        try {
            return JSON.readTree(file.toFile());
        } catch (JacksonException e) {
            throw new ModelFormatException(file, field, "not valid JSON: " + e.getOriginalMessage());
        } catch (CharConversionException e) {
            throw new ModelFormatException(file, field, "not valid JSON text: " + e.getMessage());
        }
    }
}
