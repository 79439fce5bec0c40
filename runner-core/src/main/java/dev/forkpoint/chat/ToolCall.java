package dev.forkpoint.chat;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A call of a tool by the model (parsed from its output) or by an earlier assistant turn (sent back by the client).
 *
 * @param id        the call's id (generated when the model's format has none)
 * @param name      the tool's name
 * @param arguments the arguments as a JSON object
 */
public record ToolCall(String id, String name, JsonNode arguments) {}
