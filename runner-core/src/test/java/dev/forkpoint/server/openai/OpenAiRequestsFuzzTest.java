package dev.forkpoint.server.openai;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.FuzzJson;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed bodies of OpenAI's {@code /v1/chat/completions} and {@code /v1/completions} through the server's parsing and
 * binding, {@link ChatMapping} (messages, content parts, tool calls, tools, tool_choice), the prompt field and
 * {@link OpenAiOptions}: every body is a request or a 400 naming its field.
 */
class OpenAiRequestsFuzzTest {
    /** Loads and links the classes one request needs before fuzzing, so that the first input is not charged for them. */
    @org.junit.jupiter.api.BeforeAll
    static void warmUp() throws Exception {
        new OpenAiRequestsFuzzTest().request("{\"model\":\"m\",\"prompt\":\"p\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"c\"}]}],\"max_tokens\":4,\"stop\":[\"x\"]}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    @FuzzTest
    void request(byte[] body) throws Exception {
        var error = FuzzInvariant.typedErrorOrValid(() -> {
            var tree = FuzzJson.parse(body);
            FuzzInvariant.typedErrorOrValid(() -> {
                var chat = FuzzJson.bind(tree, OpenAiRequests.Chat.class);
                var messages = ChatMapping.messages(chat.messages());
                check(!messages.isEmpty(), "no messages mapped");
                ChatMapping.tools(chat.tools(), chat.toolChoice());
                Integer max = chat.maxCompletionTokens() != null ? chat.maxCompletionTokens() : chat.maxTokens();
                SamplingOptions o = OpenAiOptions.options(chat, max, chat.maxCompletionTokens() != null ? "max_completion_tokens" : "max_tokens", -1, java.util.Map.of()).sampling();
                check(o == o.validate(), "options out of range");
            });
            var completion = FuzzJson.bind(tree, OpenAiRequests.Completion.class);
            OpenAiApi.prompt(completion.prompt());
            OpenAiOptions.options(completion, completion.maxTokens(), "max_tokens", OpenAiApi.COMPLETIONS_DEFAULT_MAX_TOKENS, java.util.Map.of());
        });
        if (error != null) check(error instanceof BadFieldException, "not a BadFieldException: " + error);
    }
}
