package dev.forkpoint.server.runner;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.fuzz.FuzzInvariant;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.FuzzJson;
import dev.forkpoint.server.OllamaOptions;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed bodies of the Ollama runner protocol's {@code POST /v1/completions} (CamelCase {@code Prompt}, {@code Options}
 * in Ollama's names) through the server's parsing, the claim test, binding and the options: every body is a request
 * or a 400 naming its field.
 */
class RunnerRequestsFuzzTest {
    /** Loads and links the classes one request needs before fuzzing, so that the first input is not charged for them. */
    @org.junit.jupiter.api.BeforeAll
    static void warmUp() throws Exception {
        new RunnerRequestsFuzzTest().request("{\"Prompt\":\"p\",\"Options\":{\"temperature\":0,\"num_predict\":2}}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    @FuzzTest
    void request(byte[] body) throws Exception {
        var error = FuzzInvariant.typedErrorOrValid(() -> {
            var tree = FuzzJson.parse(body);
            RunnerApi.claims(tree);
            var req = FuzzJson.bind(tree, RunnerApi.CompletionRequest.class);
            var options = OllamaOptions.parse(req.options());
            new GenerationRequest(req.prompt() == null ? "" : req.prompt(), options.sampling(), options.numCtx(), options.numBatch());
        });
        if (error != null) check(error instanceof BadFieldException, "not a BadFieldException: " + error);
    }
}
