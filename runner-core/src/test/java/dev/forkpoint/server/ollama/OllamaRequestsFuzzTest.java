package dev.forkpoint.server.ollama;

import dev.forkpoint.server.OllamaOptions;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.FuzzJson;

import java.util.Map;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed bodies of Ollama's {@code /api/generate}, {@code /api/chat} and {@code /api/show} through the server's
 * parsing, binding and option validation ({@link OllamaOptions}, {@link KeepAlive}): every body is a request or a 400
 * naming its field.
 */
class OllamaRequestsFuzzTest {
    /** Loads and links the classes one request needs before fuzzing, so that the first input is not charged for them. */
    @org.junit.jupiter.api.BeforeAll
    static void warmUp() throws Exception {
        new OllamaRequestsFuzzTest().request("{\"model\":\"m\",\"prompt\":\"p\",\"messages\":[{\"role\":\"user\",\"content\":\"c\"}],\"options\":{\"temperature\":0.5,\"stop\":[\"x\"]},\"keep_alive\":\"5m\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    @FuzzTest
    void request(byte[] body) throws Exception {
        var error = FuzzInvariant.typedErrorOrValid(() -> {
            var tree = FuzzJson.parse(body);
            FuzzInvariant.typedErrorOrValid(() -> {
                var generate = FuzzJson.bind(tree, OllamaRequests.Generate.class);
                options(generate.options(), generate.keepAlive());
            });
            FuzzInvariant.typedErrorOrValid(() -> {
                var chat = FuzzJson.bind(tree, OllamaRequests.Chat.class);
                options(chat.options(), chat.keepAlive());
            });
            FuzzJson.bind(tree, OllamaRequests.Show.class);
        });
        if (error != null) check(error instanceof BadFieldException, "not a BadFieldException: " + error);
    }

    static void options(Map<String, Object> options, JsonNode keepAlive) {
        OllamaOptions o = OllamaOptions.parse(options);
        check(o.numCtx() >= 0, "negative num_ctx " + o.numCtx());
        new GenerationRequest("x", o.sampling(), o.numCtx(), o.numBatch());
        KeepAlive.parse(keepAlive);
    }
}
