package dev.forkpoint.server.anthropic;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;

import java.util.List;

/**
 * The request bodies of Anthropic's Messages API, with its field names; absent fields are null. Fields whose type
 * varies (a string or an array of blocks: {@code system}, {@code content}) stay JSON and are checked where mapped.
 */
final class AnthropicRequests {
    private AnthropicRequests() {}

    record Messages(String model, @JsonProperty("max_tokens") Integer maxTokens, JsonNode system, List<JsonNode> messages,
                    List<JsonNode> tools, @JsonProperty("tool_choice") JsonNode toolChoice,
                    @JsonProperty("stop_sequences") List<String> stopSequences, Double temperature,
                    @JsonProperty("top_p") Double topP, @JsonProperty("top_k") Integer topK, Boolean stream,
                    JsonNode thinking) {}

    record CountTokens(String model, JsonNode system, List<JsonNode> messages, List<JsonNode> tools,
                       @JsonProperty("tool_choice") JsonNode toolChoice, JsonNode thinking) {}
}
