package dev.forkpoint.server.ollama;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;

import java.util.List;
import java.util.Map;

/** The request bodies of Ollama's API, with Ollama's field names. Absent fields are null. */
final class OllamaRequests {
    private OllamaRequests() {}

    record Generate(String model, String prompt, String suffix, String system, String template, List<Integer> context,
                    Boolean stream, Boolean raw, JsonNode format, Map<String, Object> options,
                    @JsonProperty("keep_alive") JsonNode keepAlive, List<String> images, JsonNode think,
                    Boolean logprobs, @JsonProperty("top_logprobs") Integer topLogprobs) implements Logprobs {}

    record Chat(String model, List<Message> messages, List<Tool> tools, Boolean stream, JsonNode format,
                Map<String, Object> options, @JsonProperty("keep_alive") JsonNode keepAlive, JsonNode think,
                Boolean logprobs, @JsonProperty("top_logprobs") Integer topLogprobs) implements Logprobs {}

    /**
     * {@code logprobs} / {@code top_logprobs} (0–20, Ollama's limit, checked even without logprobs as Ollama does;
     * only applied with {@code logprobs: true}).
     */
    interface Logprobs {
        Boolean logprobs();

        Integer topLogprobs();

        /** The engine's {@link dev.forkpoint.engine.GenerationRequest#topLogprobs()} for these fields. */
        default int engineTopLogprobs() {
            int top = topLogprobs() == null ? 0 : dev.forkpoint.server.LogprobJson.checkTop("top_logprobs", topLogprobs(), 20);
            return Boolean.TRUE.equals(logprobs()) ? top : dev.forkpoint.engine.GenerationRequest.LOGPROBS_OFF;
        }
    }

    record Message(String role, String content, List<String> images, @JsonProperty("tool_calls") List<ToolCall> toolCalls,
                   @JsonProperty("tool_name") String toolName, String thinking) {}

    record ToolCall(String id, Function function) {}

    record Function(Integer index, String name, JsonNode arguments) {}

    record Tool(String type, ToolFunction function) {}

    record ToolFunction(String name, String description, JsonNode parameters) {}

    record Show(String model, String name, Boolean verbose) {}

    /** {@code /api/embed}: {@code input} a string or an array of strings; {@code truncate} true when absent. */
    record Embed(String model, JsonNode input, Boolean truncate, Integer dimensions, Map<String, Object> options,
                 @JsonProperty("keep_alive") JsonNode keepAlive) {}

    /** {@code /api/embeddings} (the legacy route): one {@code prompt}. */
    record Embeddings(String model, String prompt, Map<String, Object> options,
                      @JsonProperty("keep_alive") JsonNode keepAlive) {}
}
