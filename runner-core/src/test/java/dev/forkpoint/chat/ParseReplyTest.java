package dev.forkpoint.chat;

import org.junit.jupiter.api.Test;

import java.util.List;

import static dev.forkpoint.chat.Templates.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Tool calls in model output, in the Qwen/Hermes XML and the Llama 3.1 JSON styles; malformed calls stay content. */
class ParseReplyTest {
    private static final ChatTemplate QWEN = ChatTemplate.of(Templates.resource("qwen2_5.jinja"), new StubTokenizer(null, "<|im_end|>", false));
    private static final ChatTemplate LLAMA = ChatTemplate.of(Templates.resource("llama3_1.jinja"), new StubTokenizer("<|begin_of_text|>", "<|eot_id|>", true));

    @Test
    void qwenCallsAreParsedAndTheRestIsContent() {
        AssistantReply reply = QWEN.parseReply("Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                + "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Rome\\\"}\"}\n</tool_call>");
        assertEquals("Let me check.", reply.content());
        assertEquals(2, reply.toolCalls().size());
        ToolCall paris = reply.toolCalls().get(0), rome = reply.toolCalls().get(1);
        assertEquals("get_weather", paris.name());
        assertEquals(json("{\"city\": \"Paris\"}"), paris.arguments());
        assertEquals(json("{\"city\": \"Rome\"}"), rome.arguments());
        assertTrue(paris.id().startsWith("call_") && paris.id().length() > 5, paris.id());
        assertNotEquals(paris.id(), rome.id());
    }

    @Test
    void qwenTextWithoutCallsIsAllContent() {
        AssistantReply reply = QWEN.parseReply("  Just text.  ");
        assertEquals("  Just text.  ", reply.content());
        assertEquals(List.of(), reply.toolCalls());
    }

    @Test
    void malformedQwenCallStaysContent() {
        String output = "Sure <tool_call>{\"name\": \"get_weather\", \"arguments\": {</tool_call>";
        AssistantReply reply = QWEN.parseReply(output);
        assertEquals(output, reply.content());
        assertEquals(List.of(), reply.toolCalls());
        AssistantReply noName = QWEN.parseReply("<tool_call>{\"arguments\": {}}</tool_call>");
        assertEquals(List.of(), noName.toolCalls());
    }

    @Test
    void llamaJsonCallWithParameters() {
        AssistantReply reply = LLAMA.parseReply("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}");
        assertEquals("", reply.content());
        assertEquals(1, reply.toolCalls().size());
        assertEquals("get_weather", reply.toolCalls().getFirst().name());
        assertEquals(json("{\"city\": \"Paris\"}"), reply.toolCalls().getFirst().arguments());
    }

    @Test
    void llamaPythonTagAndSeveralCalls() {
        AssistantReply reply = LLAMA.parseReply("<|python_tag|>{\"name\": \"a\", \"arguments\": {\"x\": \"1;2\"}}; {\"name\": \"b\", \"parameters\": {}}");
        assertEquals("", reply.content());
        assertEquals(List.of("a", "b"), reply.toolCalls().stream().map(ToolCall::name).toList());
        assertEquals(json("{\"x\": \"1;2\"}"), reply.toolCalls().get(0).arguments());
        assertEquals(json("{}"), reply.toolCalls().get(1).arguments());
    }

    @Test
    void llamaTextAndMalformedJsonStayContent() {
        for (String output : List.of("The weather is fine.", "{\"name\": \"get_weather\", \"parameters\": {\"city\": ",
                "{\"city\": \"Paris\"}", "{\"name\": \"a\", \"parameters\": {}} and some words")) {
            AssistantReply reply = LLAMA.parseReply(output);
            assertEquals(output, reply.content());
            assertEquals(List.of(), reply.toolCalls(), output);
        }
    }

    @Test
    void withoutAToolFormatEverythingIsContent() {
        ChatTemplate none = ChatTemplate.of(Templates.resource("llama3.jinja"), new StubTokenizer("<|begin_of_text|>", "<|eot_id|>", true));
        String output = "{\"name\": \"get_weather\", \"parameters\": {}}";
        assertEquals(new AssistantReply(output, List.of()), none.parseReply(output));
    }
}
