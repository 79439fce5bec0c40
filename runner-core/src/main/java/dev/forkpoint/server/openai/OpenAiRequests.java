package dev.forkpoint.server.openai;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;

import java.util.List;

/**
 * The request bodies of OpenAI's API, with OpenAI's field names; absent fields are null. Fields whose type varies
 * (string or array: {@code content}, {@code stop}, {@code prompt}; string or object: {@code tool_choice}) stay JSON
 * and are checked where they are mapped.
 */
final class OpenAiRequests {
    private OpenAiRequests() {}

    /** The sampling and length fields both endpoints share. */
    interface Sampling {
        Integer maxTokens();

        Double temperature();

        Double topP();

        Long seed();

        JsonNode stop();

        Double presencePenalty();

        Double frequencyPenalty();

        Integer n();

        Boolean stream();

        StreamOptions streamOptions();

        JsonNode logitBias();
    }

    record StreamOptions(@JsonProperty("include_usage") Boolean includeUsage) {}

    record Chat(String model, List<JsonNode> messages,
                @JsonProperty("max_tokens") Integer maxTokens,
                @JsonProperty("max_completion_tokens") Integer maxCompletionTokens,
                Double temperature, @JsonProperty("top_p") Double topP, Long seed, JsonNode stop,
                @JsonProperty("presence_penalty") Double presencePenalty,
                @JsonProperty("frequency_penalty") Double frequencyPenalty,
                Integer n, Boolean stream, @JsonProperty("stream_options") StreamOptions streamOptions,
                @JsonProperty("response_format") JsonNode responseFormat,
                List<JsonNode> tools, @JsonProperty("tool_choice") JsonNode toolChoice,
                Boolean logprobs, @JsonProperty("top_logprobs") Integer topLogprobs,
                @JsonProperty("logit_bias") JsonNode logitBias,
                @JsonProperty("reasoning_effort") JsonNode reasoningEffort, JsonNode reasoning) implements Sampling {}

    record Completion(String model, JsonNode prompt, @JsonProperty("max_tokens") Integer maxTokens,
                      Double temperature, @JsonProperty("top_p") Double topP, Long seed, JsonNode stop,
                      @JsonProperty("presence_penalty") Double presencePenalty,
                      @JsonProperty("frequency_penalty") Double frequencyPenalty,
                      Integer n, Boolean stream, @JsonProperty("stream_options") StreamOptions streamOptions,
                      @JsonProperty("logprobs") Integer logprobCount, Boolean echo, String suffix,
                      @JsonProperty("best_of") Integer bestOf, @JsonProperty("logit_bias") JsonNode logitBias) implements Sampling {}

    /**
     * {@code /v1/embeddings}: {@code input} a string, an array of strings, an array of token ids or an array of arrays of
     * token ids; {@code encoding_format} float (default) or base64; {@code dimensions}; {@code user} is accepted.
     */
    record Embeddings(String model, JsonNode input, @JsonProperty("encoding_format") String encodingFormat,
                      Integer dimensions, String user) {}
}
