package dev.forkpoint.chat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.fuzz.TinyLlama;
import dev.forkpoint.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Chat templates: fuzzed Jinja sources rendered with ordinary messages, and the templates of public models rendered
 * with fuzzed messages (with thinking), tools and thinking modes, then the reply parser on fuzzed model output; the
 * thinking parser on fuzzed output cut into fuzzed pieces (it must divide it as it divides the whole). A template either renders (message
 * ends ascending, or -1, inside the prompt) or is refused with a typed error — in bounded time: a template that
 * loops or grows without end must be stopped, not hang the server.
 */
class ChatTemplateFuzzTest {
    static final List<String> ROLES = List.of("system", "user", "assistant", "tool", "ipython", "developer", "");
    static final List<String> SOURCES = List.of(Templates.resource("llama2.jinja"), Templates.resource("llama3.jinja"),
            Templates.resource("llama3_1.jinja"), Templates.resource("qwen2_5.jinja"), Templates.resource("qwen3.jinja"));
    static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static Tokenizer tokenizer;

    static synchronized Tokenizer tokenizer() {
        if (tokenizer == null) {
            try (GgufFile f = GgufFile.open(TinyLlama.ggufFile())) {
                tokenizer = Tokenizer.fromGguf(f);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return tokenizer;
    }

    @org.junit.jupiter.api.BeforeAll
    static void load() throws Exception {
        tokenizer();
        for (String source : SOURCES) render(source, List.of(ChatMessage.of("user", "Hi")), List.of(), true, "");
    }

    @FuzzTest(maxDuration = "30s")
    void template(FuzzedDataProvider data) throws Exception {
        boolean tools = data.consumeBoolean(), generationPrompt = data.consumeBoolean();
        String source = data.consumeRemainingAsString();
        List<ChatMessage> messages = List.of(ChatMessage.of("system", "Be brief."), ChatMessage.of("user", "Hi"),
                new ChatMessage("assistant", "", List.of(new ToolCall("call_0", "get_weather", F.objectNode().put("city", "Paris"))), null, null),
                new ChatMessage("tool", "sunny", List.of(), "call_0", "get_weather"), ChatMessage.of("user", "Thanks"));
        List<ToolDefinition> defs = tools ? List.of(new ToolDefinition("get_weather", "Weather of a city", schema())) : List.of();
        render(source, messages, defs, generationPrompt, "");
    }

    @FuzzTest(maxDuration = "30s")
    void messages(FuzzedDataProvider data) throws Exception {
        String source = data.pickValue(SOURCES);
        int n = data.consumeInt(0, 6);
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String role = data.consumeBoolean() ? data.pickValue(ROLES) : data.consumeString(12);
            List<ToolCall> calls = new ArrayList<>();
            int c = role.equals("assistant") ? data.consumeInt(0, 2) : 0;
            for (int j = 0; j < c; j++) {
                calls.add(new ToolCall(data.consumeString(8), data.consumeString(16), arguments(data)));
            }
            String content = data.consumeString(200);
            String thinking = role.equals("assistant") ? data.consumeString(40) : "";
            messages.add(new ChatMessage(role, content, calls, role.equals("tool") ? data.consumeString(8) : null,
                    role.equals("tool") && data.consumeBoolean() ? data.consumeString(8) : null, thinking));
        }
        List<ToolDefinition> tools = new ArrayList<>();
        for (int i = data.consumeInt(0, 2); i > 0; i--) tools.add(new ToolDefinition(data.consumeString(16), data.consumeString(40), schema()));
        boolean generationPrompt = data.consumeBoolean();
        ThinkMode think = data.pickValue(List.of(ThinkMode.DEFAULT, ThinkMode.ON, ThinkMode.OFF, ThinkMode.level("high")));
        render(source, messages, tools, generationPrompt, think, data.consumeRemainingAsString());
    }

    @FuzzTest(maxDuration = "30s")
    void thinkingReply(FuzzedDataProvider data) throws Exception {
        boolean inside = data.consumeBoolean(), tools = data.consumeBoolean();
        int[] cuts = new int[data.consumeInt(0, 8)];
        for (int i = 0; i < cuts.length; i++) cuts[i] = data.consumeInt(0, 400);
        String output = data.consumeRemainingAsString();
        ReplyFormat format = new ReplyFormat(true, inside, tools ? ToolCallFormat.QWEN_XML : ToolCallFormat.NONE);
        AssistantReply whole = format.parse(output);
        java.util.Arrays.sort(cuts);
        ThinkingParser p = format.thinkingParser();
        StringBuilder thinking = new StringBuilder(), content = new StringBuilder();
        int from = 0;
        for (int cut : cuts) {
            int to = Math.min(Math.max(cut, from), output.length());
            ThinkingSplit s = p.add(output.substring(from, to));
            check(s.thinking().isEmpty() || content.isEmpty(), "thinking released after the answer began");
            thinking.append(s.thinking());
            content.append(s.content());
            from = to;
        }
        ThinkingSplit s = p.add(output.substring(from)), end = p.finish();
        thinking.append(s.thinking()).append(end.thinking());
        content.append(s.content()).append(end.content());
        check(thinking.toString().equals(whole.thinking()), "pieces divide otherwise than the whole: thinking");
        check(format.answer(thinking.toString(), content.toString()).content().equals(whole.content()),
                "pieces divide otherwise than the whole: answer");
        check(whole.thinking().equals(whole.thinking().strip()), "thinking keeps whitespace at its edges");
        if (!inside && !output.strip().startsWith(ChatTemplate.THINK_OPEN)) {
            check(whole.thinking().isEmpty() && (tools || whole.content().equals(output)), "output without the block changed");
        }
    }

    static void render(String source, List<ChatMessage> messages, List<ToolDefinition> tools, boolean generationPrompt,
                       String reply) throws Exception {
        render(source, messages, tools, generationPrompt, ThinkMode.DEFAULT, reply);
    }

    static void render(String source, List<ChatMessage> messages, List<ToolDefinition> tools, boolean generationPrompt,
                       ThinkMode think, String reply) throws Exception {
        FuzzInvariant.typedErrorOrValid(() -> {
            ChatTemplate t = ChatTemplate.of(source, tokenizer());
            RenderedChat chat = t.render(messages, tools, generationPrompt, think);
            check(chat.prompt() != null && chat.messageEnds().length == messages.size(), "message ends do not match the messages");
            int previous = 0;
            for (int end : chat.messageEnds()) {
                if (end == -1) continue;
                check(end > previous && end <= chat.prompt().length(), "message end " + end + " after " + previous
                        + " in a prompt of " + chat.prompt().length());
                previous = end;
            }
            int[] boundaries = t.encode(chat).boundaries();
            for (int i = 1; i < boundaries.length; i++) check(boundaries[i] > boundaries[i - 1], "boundaries not ascending");
            AssistantReply parsed = t.parseReply(reply);
            check(parsed.content() != null && parsed.toolCalls() != null, "a reply without content or tool calls");
            AssistantReply divided = t.replyFormat(chat.prompt(), think, !tools.isEmpty()).parse(reply);
            check(divided.content() != null && divided.thinking() != null, "a reply without content or thinking");
        });
    }

    static JsonNode arguments(FuzzedDataProvider data) {
        var o = F.objectNode();
        for (int i = data.consumeInt(0, 3); i > 0; i--) {
            switch (data.consumeInt(0, 3)) {
                case 0 -> o.put(data.consumeString(8), data.consumeString(16));
                case 1 -> o.put(data.consumeString(8), data.consumeLong());
                case 2 -> o.put(data.consumeString(8), data.consumeDouble());
                default -> o.putArray(data.consumeString(8)).add(data.consumeBoolean()).addNull();
            }
        }
        return o;
    }

    static JsonNode schema() {
        var s = F.objectNode().put("type", "object");
        s.putObject("properties").putObject("city").put("type", "string");
        s.putArray("required").add("city");
        return s;
    }
}
