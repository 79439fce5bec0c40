package dev.forkpoint.chat;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A tool the client offers the model: passed to the chat template as {@code tools} in the OpenAI function shape
 * ({@code {"type":"function","function":{"name","description","parameters"}}}).
 *
 * @param name        the function name
 * @param description what it does ("" when not given)
 * @param parameters  its parameters as a JSON schema object (an empty object schema when not given)
 */
public record ToolDefinition(String name, String description, JsonNode parameters) {}
