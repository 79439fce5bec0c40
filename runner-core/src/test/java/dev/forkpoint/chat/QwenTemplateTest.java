package dev.forkpoint.chat;

import dev.forkpoint.TestData;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;

import static dev.forkpoint.chat.Templates.json;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** ChatML: Qwen2's own template (from its tokenizer_config.json) and a Qwen2.5-style template with tools. */
class QwenTemplateTest {
    private static final StubTokenizer QWEN = new StubTokenizer(null, "<|im_end|>", false);

    private static ChatTemplate qwen2() throws IOException {
        String source = Templates.JSON.readTree(TestData.shared("tokenizers/qwen2/tokenizer_config.json").toFile())
                .get("chat_template").asText();
        return ChatTemplate.of(source, QWEN);
    }

    @Test
    void qwen2TemplateRendersChatMl() throws IOException {
        List<ChatMessage> messages = List.of(
                ChatMessage.of("system", "Be brief."),
                ChatMessage.of("user", "Hi!"),
                ChatMessage.of("assistant", "Hello."),
                ChatMessage.of("user", "2+2?"));
        String want = "<|im_start|>system\nBe brief.<|im_end|>\n"
                + "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n"
                + "Hello.<|im_end|>\n"
                + "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n";
        ChatTemplate template = qwen2();
        RenderedChat chat = template.render(messages, List.of(), true);
        assertEquals(want, chat.prompt());
        assertEquals(ToolCallFormat.NONE, template.toolCallFormat());
        int system = want.indexOf("<|im_start|>user");
        int user = want.indexOf("Hello.");
        int assistant = want.indexOf("<|im_start|>user", user);
        assertArrayEquals(new int[] {system, user, assistant, want.length()}, chat.messageEnds());
    }

    @Test
    void qwen2TemplateHasADefaultSystemPrompt() throws IOException {
        assertEquals("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
                qwen2().render(List.of(ChatMessage.of("user", "Hi")), List.of(), true).prompt());
    }

    @Test
    void qwen25TemplateWithToolsCallsAndResults() {
        ChatTemplate template = ChatTemplate.of(Templates.resource("qwen2_5.jinja"), QWEN);
        assertEquals(ToolCallFormat.QWEN_XML, template.toolCallFormat());
        List<ChatMessage> messages = List.of(
                ChatMessage.of("user", "Weather in Paris and Rome?"),
                Templates.assistantCalls(
                        new ToolCall("call_1", "get_weather", json("{\"city\": \"Paris\"}")),
                        // arguments given as a JSON string (as OpenAI clients send them) render as the object
                        new ToolCall("call_2", "get_weather", json("\"{\\\"city\\\": \\\"Rome\\\"}\""))),
                Templates.toolResult("call_1", "21"),
                Templates.toolResult("call_2", "25"));
        String want = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n"
                + "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                + "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
                + "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current weather of a city\", "
                + "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n"
                + "</tools>\n\nFor each function call, return a json object with function name and arguments within "
                + "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
                + "</tool_call><|im_end|>\n"
                + "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n"
                + "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                + "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call><|im_end|>\n"
                + "<|im_start|>user\n<tool_response>\n21\n</tool_response>\n<tool_response>\n25\n</tool_response><|im_end|>\n"
                + "<|im_start|>assistant\n";
        RenderedChat chat = template.render(messages, List.of(Templates.weatherTool()), true);
        assertEquals(want, chat.prompt());
        int user = want.indexOf("<|im_start|>assistant\n<tool_call>");
        int assistant = want.indexOf("<|im_start|>user\n<tool_response>");
        // the first result alone would close the user turn, which the second one continues: no boundary there
        int results = want.indexOf("<|im_start|>assistant\n", assistant);
        assertArrayEquals(new int[] {user, assistant, -1, results}, chat.messageEnds());
    }

    @Test
    void withoutToolsTheToolBlockIsAbsent() {
        ChatTemplate template = ChatTemplate.of(Templates.resource("qwen2_5.jinja"), QWEN);
        assertEquals("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n",
                template.render(List.of(ChatMessage.of("system", "S"), ChatMessage.of("user", "U")), List.of(), false).prompt());
    }
}
