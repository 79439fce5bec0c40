package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.sampling.structured.GrammarNode;
import dev.forkpoint.sampling.structured.JsonSchemaGrammar;

/**
 * Ollama's {@code format} field, shared by its API ({@code format}) and its runner protocol ({@code Format}): absent,
 * null or "" = free text; "json" = any JSON object (Ollama's JSON mode); an object = a JSON schema the output must
 * satisfy. Anything else, or a schema with a keyword structured outputs do not support, is a 400 naming the field.
 */
public final class OllamaFormat {
    private OllamaFormat() {}

    /** The grammar {@code format} asks for (null: free text); {@code field} names it in errors. */
    public static GrammarNode grammar(JsonNode format, String field) {
        if (format == null || format.isNull() || (format.isTextual() && format.asText().isEmpty())) return null;
        if (format.isTextual()) {
            if (format.asText().equals("json")) return JsonSchemaGrammar.anyObject();
            throw new BadFieldException(field, field + " must be \"json\" or a JSON schema object, got \"" + format.asText() + "\"");
        }
        if (!format.isObject()) throw new BadFieldException(field, field + " must be \"json\" or a JSON schema object, got " + Json.describe(format));
        try {
            return JsonSchemaGrammar.compile(format);
        } catch (InvalidInputException e) {
            throw new BadFieldException(field, field + ": " + e.getMessage());
        }
    }
}
