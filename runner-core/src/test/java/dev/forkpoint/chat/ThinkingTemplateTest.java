package dev.forkpoint.chat;

import org.junit.jupiter.api.Test;

import java.util.List;

import static dev.forkpoint.chat.Templates.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Thinking through Qwen3's own template (test resource chat/qwen3.jinja): the request's mode reaches it as
 * {@code enable_thinking}, an assistant message's thinking as {@code reasoning_content}, and the reply format follows
 * from the template and the rendered prompt (Qwen3.5-style templates open the block in the prompt).
 */
class ThinkingTemplateTest {
    private static final StubTokenizer QWEN = new StubTokenizer(null, "<|im_end|>", false);
    static final ChatTemplate QWEN3 = ChatTemplate.of(Templates.resource("qwen3.jinja"), QWEN);
    /** Qwen3.5's generation prompt: the block is opened unless thinking is off. */
    static final ChatTemplate OPENS_BLOCK = ChatTemplate.of(Templates.resource("qwen3.jinja").replace(
            "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}",
            "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- else %}\n        {{- '<think>\\n' }}\n    {%- endif %}"), QWEN);

    private static final List<ChatMessage> HI = List.of(ChatMessage.of("user", "Hi"));

    @Test
    void thinkModeReachesTheTemplate() {
        String base = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
        assertEquals(base, QWEN3.render(HI, List.of(), true, ThinkMode.DEFAULT).prompt());
        assertEquals(base, QWEN3.render(HI, List.of(), true, ThinkMode.ON).prompt());
        assertEquals(base, QWEN3.render(HI, List.of(), true, ThinkMode.level("high")).prompt());
        assertEquals(base + "<think>\n\n</think>\n\n", QWEN3.render(HI, List.of(), true, ThinkMode.OFF).prompt());
        assertEquals(base + "<think>\n", OPENS_BLOCK.render(HI, List.of(), true, ThinkMode.DEFAULT).prompt());
        assertEquals(base + "<think>\n\n</think>\n\n", OPENS_BLOCK.render(HI, List.of(), true, ThinkMode.OFF).prompt());
        ChatTemplate effort = ChatTemplate.of("{{ reasoning_effort | default('unset') }}/{{ enable_thinking is defined }}", QWEN);
        assertEquals("high/true", effort.render(HI, List.of(), true, ThinkMode.level("high")).prompt());
        assertEquals("unset/false", effort.render(HI, List.of(), true, ThinkMode.DEFAULT).prompt());
    }

    @Test
    void replyFormatFollowsTemplateModeAndPrompt() {
        assertTrue(QWEN3.supportsThinking());
        assertFalse(ChatTemplate.of(Templates.resource("qwen2_5.jinja"), QWEN).supportsThinking());
        assertFalse(ChatTemplate.of(null, QWEN).supportsThinking());

        String prompt = QWEN3.render(HI, List.of(), true, ThinkMode.DEFAULT).prompt();
        assertEquals(new ReplyFormat(true, false, ToolCallFormat.NONE), QWEN3.replyFormat(prompt, ThinkMode.DEFAULT, false));
        assertEquals(new ReplyFormat(true, false, ToolCallFormat.QWEN_XML), QWEN3.replyFormat(prompt, ThinkMode.ON, true));
        assertEquals(new ReplyFormat(false, false, ToolCallFormat.NONE), QWEN3.replyFormat(prompt, ThinkMode.OFF, false));

        String opened = OPENS_BLOCK.render(HI, List.of(), true, ThinkMode.ON).prompt();
        assertEquals(new ReplyFormat(true, true, ToolCallFormat.NONE), OPENS_BLOCK.replyFormat(opened, ThinkMode.ON, false));
        String closed = OPENS_BLOCK.render(HI, List.of(), true, ThinkMode.OFF).prompt();
        assertEquals(new ReplyFormat(false, false, ToolCallFormat.NONE), OPENS_BLOCK.replyFormat(closed, ThinkMode.OFF, false));

        ChatTemplate plain = ChatTemplate.of(Templates.resource("qwen2_5.jinja"), QWEN);
        assertEquals(ReplyFormat.PLAIN, plain.replyFormat("x<think>", ThinkMode.ON, false));
    }

    @Test
    void historyThinkingGoesToTheTemplateAsReasoningContent() {
        ChatMessage call = new ChatMessage("assistant", "Let me check.",
                List.of(new ToolCall("call_1", "get_weather", json("{\"city\": \"Paris\"}"))), null, null, "I need the weather.");
        List<ChatMessage> messages = List.of(ChatMessage.of("user", "Weather in Paris?"), call, Templates.toolResult("call_1", "21"));
        String prompt = QWEN3.render(messages, List.of(), true, ThinkMode.DEFAULT).prompt();
        assertEquals("<|im_start|>user\nWeather in Paris?<|im_end|>\n"
                + "<|im_start|>assistant\n<think>\nI need the weather.\n</think>\n\nLet me check.\n"
                + "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
                + "<|im_start|>user\n<tool_response>\n21\n</tool_response><|im_end|>\n<|im_start|>assistant\n", prompt);

        // before the last user turn Qwen3 drops the thinking, as its template says
        List<ChatMessage> later = List.of(ChatMessage.of("user", "Hi"),
                new ChatMessage("assistant", "Hello.", List.of(), null, null, "Greet."), ChatMessage.of("user", "Bye"));
        assertFalse(QWEN3.render(later, List.of(), true, ThinkMode.DEFAULT).prompt().contains("Greet."));
    }
}
