package dev.forkpoint.chat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.TestData;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.forkpoint.chat.Templates.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Llama 3 chat templates against Meta's reference: the "chat_dialog" case of meta-llama/llama3's tokenizer tests gives
 * the token ids of a formatted dialog (ending with the assistant header); decoded with the model's tokenizer.model
 * (base64 token, rank) they are the text the template must render.
 */
class Llama3TemplateTest {
    private static final String BOS = "<|begin_of_text|>";
    private static List<ChatMessage> dialog;
    private static String expected;

    @BeforeAll
    static void loadReference() throws IOException {
        Path vectors = TestData.shared("tokenizers/llama3/test_vectors.json");
        Path model = TestData.shared("tokenizers/llama3/tokenizer.model");
        JsonNode root = Templates.JSON.readTree(vectors.toFile());
        Map<Integer, byte[]> tokens = new HashMap<>();
        for (String line : Files.readAllLines(model, StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            String[] parts = line.trim().split(" ");
            tokens.put(Integer.parseInt(parts[1]), Base64.getDecoder().decode(parts[0]));
        }
        root.get("special_tokens").properties()
                .forEach(e -> tokens.put(e.getValue().asInt(), e.getKey().getBytes(StandardCharsets.UTF_8)));
        JsonNode chatCase = null;
        for (JsonNode c : root.get("cases")) if (c.has("chat_dialog")) chatCase = c;
        assertTrue(chatCase != null, "test_vectors.json has no chat_dialog case");
        dialog = new ArrayList<>();
        for (JsonNode m : chatCase.get("chat_dialog")) dialog.add(ChatMessage.of(m.get("role").asText(), m.get("content").asText()));
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        for (JsonNode id : chatCase.get("ids")) text.writeBytes(tokens.get(id.asInt()));
        expected = text.toString(StandardCharsets.UTF_8);
        assertEquals(128000, chatCase.get("ids").get(0).asInt(), "the dialog starts with BOS");
        assertTrue(expected.startsWith(BOS) && expected.endsWith("<|start_header_id|>assistant<|end_header_id|>\n\n"));
    }

    @Test
    void llama3TemplateRendersMetasDialogFormat() {
        ChatTemplate template = ChatTemplate.of(Templates.resource("llama3.jinja"), new StubTokenizer(BOS, "<|eot_id|>", false));
        assertEquals(expected, template.render(dialog, List.of(), true).prompt());
        assertEquals(ToolCallFormat.NONE, template.toolCallFormat());
    }

    @Test
    void bosIsLeftToTheTokenizerWhenItAddsOne() {
        ChatTemplate template = ChatTemplate.of(Templates.resource("llama3.jinja"), new StubTokenizer(BOS, "<|eot_id|>", true));
        RenderedChat chat = template.render(dialog, List.of(), true);
        assertEquals(expected.substring(BOS.length()), chat.prompt());
        // message ends: after each <|eot_id|>
        int first = chat.prompt().indexOf("<|eot_id|>") + "<|eot_id|>".length();
        int second = chat.prompt().indexOf("<|eot_id|>", first) + "<|eot_id|>".length();
        assertEquals(List.of(first, second), List.of(chat.messageEnds()[0], chat.messageEnds()[1]));
    }

    @Test
    void llama31TemplateAddsTheKnowledgeDatesToTheSystemTurn() {
        ChatTemplate template = ChatTemplate.of(Templates.resource("llama3_1.jinja"), new StubTokenizer(BOS, "<|eot_id|>", false));
        String header = "<|start_header_id|>system<|end_header_id|>\n\n";
        String withDates = expected.replace(header, header + "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
        assertEquals(withDates, template.render(dialog, List.of(), true).prompt());
        assertEquals(ToolCallFormat.LLAMA3_JSON, template.toolCallFormat());
    }

    @Test
    void llama31TemplateWithToolsCallsAndResults() {
        ChatTemplate template = ChatTemplate.of(Templates.resource("llama3_1.jinja"), new StubTokenizer(BOS, "<|eot_id|>", true));
        List<ChatMessage> messages = List.of(
                ChatMessage.of("system", "You are a bot."),
                ChatMessage.of("user", "What is the weather in Paris?"),
                Templates.assistantCalls(new ToolCall("call_1", "get_weather", json("{\"city\": \"Paris\"}"))),
                Templates.toolResult("call_1", "{\"temp\": 21}"));
        String toolJson = """
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "description": "Current weather of a city",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "city": {
                                    "type": "string"
                                }
                            },
                            "required": [
                                "city"
                            ]
                        }
                    }
                }""";
        String want = "<|start_header_id|>system<|end_header_id|>\n\n"
                + "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                + "You are a bot.<|eot_id|>"
                + "<|start_header_id|>user<|end_header_id|>\n\n"
                + "Given the following functions, please respond with a JSON for a function call with its proper "
                + "arguments that best answers the given prompt.\n\n"
                + "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}."
                + "Do not use variables.\n\n"
                + toolJson + "\n\n"
                + "What is the weather in Paris?<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n"
                + "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"
                // Python's strings are iterable, so the template tojson's a string result
                + "<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n";
        assertEquals(want, template.render(messages, List.of(Templates.weatherTool()), true).prompt());
    }
}
