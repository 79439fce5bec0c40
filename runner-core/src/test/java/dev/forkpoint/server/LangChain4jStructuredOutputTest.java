package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.anthropic.AnthropicChatModel;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.request.ResponseFormatType;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.request.json.JsonSchema;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.ollama.OllamaChatModel;
import dev.langchain4j.model.openai.OpenAiChatModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * langchain4j's structured-output paths against a live server (stories260K): a {@link ResponseFormat} with a JSON
 * schema on the Ollama model (sent as {@code format}) and on the OpenAI model (strict {@code response_format
 * json_schema}), and a forced tool ({@link ToolChoice#REQUIRED}) on the Anthropic model ({@code tool_choice: any}).
 * Each reply must validate against the schema langchain4j sent (checked by networknt), and the Ollama and OpenAI
 * replies, greedy with one grammar, must be the same object.
 */
class LangChain4jStructuredOutputTest {
    static final String SCHEMA = "{\"type\":\"object\",\"properties\":{\"kind\":{\"type\":\"string\",\"enum\":[\"cat\",\"dog\",\"bird\"]},"
            + "\"age\":{\"type\":\"integer\"},\"vegan\":{\"type\":\"boolean\"},\"name\":{\"type\":\"string\"}},"
            + "\"required\":[\"kind\",\"age\",\"vegan\",\"name\"],\"additionalProperties\":false}";
    static final String PROMPT = "Lily said,";
    static ServerHarness h;

    @BeforeAll
    static void start() throws Exception {
        h = ServerHarness.allApis(ServerHarness.config());
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    static ResponseFormat petFormat() {
        JsonObjectSchema pet = JsonObjectSchema.builder()
                .addEnumProperty("kind", List.of("cat", "dog", "bird"))
                .addIntegerProperty("age")
                .addBooleanProperty("vegan")
                .addStringProperty("name")
                .required("kind", "age", "vegan", "name").additionalProperties(false).build();
        return ResponseFormat.builder().type(ResponseFormatType.JSON)
                .jsonSchema(JsonSchema.builder().name("Pet").rootElement(pet).build()).build();
    }

    static JsonNode answer(ChatModel model) {
        ChatResponse r = model.chat(ChatRequest.builder().messages(UserMessage.from(PROMPT)).responseFormat(petFormat()).build());
        return StructuredOutputsTest.valid(SCHEMA, r.aiMessage().text());
    }

    @Test
    void ollamaAndOpenAiResponseFormatGiveTheSameValidObject() {
        ChatModel ollama = OllamaChatModel.builder().baseUrl(h.url()).modelName(ServerHarness.MODEL).temperature(0.0).numPredict(300)
                .timeout(Duration.ofSeconds(60)).maxRetries(0).build();
        ChatModel openAi = OpenAiChatModel.builder().baseUrl(h.url() + "/v1").apiKey("unused").modelName(ServerHarness.MODEL)
                .temperature(0.0).maxTokens(300).timeout(Duration.ofSeconds(60)).maxRetries(0)
                .supportedCapabilities(Capability.RESPONSE_FORMAT_JSON_SCHEMA).strictJsonSchema(true).build();
        assertEquals(answer(ollama), answer(openAi));
    }

    @Test
    void anthropicForcedToolGivesValidArguments() {
        ToolSpecification weather = ToolSpecification.builder().name("get_weather").description("The weather in a city")
                .parameters(JsonObjectSchema.builder().addEnumProperty("unit", List.of("C", "F")).addIntegerProperty("days")
                        .required("unit", "days").build()).build();
        ChatModel anthropic = AnthropicChatModel.builder().baseUrl(h.url() + "/v1/").apiKey("unused").modelName(ServerHarness.MODEL)
                .temperature(0.0).maxTokens(200).timeout(Duration.ofSeconds(60)).maxRetries(0).build();
        ChatResponse r = anthropic.chat(ChatRequest.builder().messages(UserMessage.from("Weather?")).toolSpecifications(weather)
                .toolChoice(ToolChoice.REQUIRED).build());
        List<ToolExecutionRequest> calls = r.aiMessage().toolExecutionRequests();
        assertEquals(1, calls.size(), r.toString());
        assertEquals("get_weather", calls.getFirst().name());
        StructuredOutputsTest.valid("{\"type\":\"object\",\"properties\":{\"unit\":{\"enum\":[\"C\",\"F\"]},\"days\":{\"type\":\"integer\"}},"
                + "\"required\":[\"unit\",\"days\"]}", calls.getFirst().arguments());
    }
}
