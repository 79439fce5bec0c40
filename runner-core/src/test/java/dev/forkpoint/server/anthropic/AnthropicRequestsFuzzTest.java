package dev.forkpoint.server.anthropic;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.FuzzJson;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed bodies of Anthropic's {@code /v1/messages} and {@code /v1/messages/count_tokens} through the server's parsing
 * and binding and {@link MessageMapping} (system, content blocks, tool_use / tool_result, tools, tool_choice): every
 * body is a request or a 400 naming its field.
 */
class AnthropicRequestsFuzzTest {
    /** Loads and links the classes one request needs before fuzzing, so that the first input is not charged for them. */
    @org.junit.jupiter.api.BeforeAll
    static void warmUp() throws Exception {
        new AnthropicRequestsFuzzTest().request("{\"model\":\"m\",\"max_tokens\":4,\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"c\"}]}]}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    @FuzzTest
    void request(byte[] body) throws Exception {
        var error = FuzzInvariant.typedErrorOrValid(() -> {
            var tree = FuzzJson.parse(body);
            FuzzInvariant.typedErrorOrValid(() -> {
                var m = FuzzJson.bind(tree, AnthropicRequests.Messages.class);
                var messages = MessageMapping.messages(m.system(), m.messages());
                check(!messages.isEmpty(), "no messages mapped");
                MessageMapping.tools(m.tools(), m.toolChoice());
            });
            var count = FuzzJson.bind(tree, AnthropicRequests.CountTokens.class);
            MessageMapping.messages(count.system(), count.messages());
            MessageMapping.tools(count.tools(), count.toolChoice());
        });
        if (error != null) check(error instanceof BadFieldException, "not a BadFieldException: " + error);
    }
}
