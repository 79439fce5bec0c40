package dev.forkpoint.server;

import dev.forkpoint.engine.GenerationResult;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.language.StreamingLanguageModel;
import dev.langchain4j.model.ollama.OllamaChatModel;
import dev.langchain4j.model.ollama.OllamaLanguageModel;
import dev.langchain4j.model.ollama.OllamaStreamingChatModel;
import dev.langchain4j.model.ollama.OllamaStreamingLanguageModel;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Ollama API driven by a real client library (langchain4j-ollama): chat and completion, streamed and not, against
 * the engine's own greedy output for the same prompt (stories260K has no chat template, so a single user message is
 * the prompt itself).
 */
class OllamaClientLibraryTest {
    static final int N = 30;
    static final String PROMPT = "Once upon a time, there was a little girl named Lily.";
    static ServerHarness h;
    static GenerationResult expected;

    @BeforeAll
    static void start() throws Exception {
        h = new ServerHarness(ServerHarness.config());
        expected = h.greedy(PROMPT, N);
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    @Test
    void chat() {
        var model = OllamaChatModel.builder().baseUrl(h.server.address()).modelName(ServerHarness.MODEL)
                .temperature(0.0).numPredict(N).timeout(Duration.ofSeconds(60)).maxRetries(0).build();
        ChatResponse r = model.chat(UserMessage.from(PROMPT));
        assertEquals(expected.text(), r.aiMessage().text());
        assertEquals(expected.generatedIds().length, r.tokenUsage().outputTokenCount());
        assertEquals(FinishReason.LENGTH, r.finishReason());
        // evaluated prompt tokens: at least the last one, at most the whole prompt
        int input = r.tokenUsage().inputTokenCount();
        assertTrue(input >= 1 && input <= expected.promptTokens(), "input tokens " + input);
    }

    @Test
    void streamingChatEqualsTheEngine() throws Exception {
        var model = OllamaStreamingChatModel.builder().baseUrl(h.server.address()).modelName(ServerHarness.MODEL)
                .temperature(0.0).numPredict(N).timeout(Duration.ofSeconds(60)).build();
        List<String> pieces = new ArrayList<>();
        ChatResponse r = ServerHarness.stream(model, ChatRequest.builder().messages(UserMessage.from(PROMPT)).build(), pieces);
        assertEquals(expected.text(), String.join("", pieces));
        assertEquals(expected.text(), r.aiMessage().text());
        assertEquals(expected.generatedIds().length, r.tokenUsage().outputTokenCount());
    }

    @Test
    void completion() {
        var model = OllamaLanguageModel.builder().baseUrl(h.server.address()).modelName(ServerHarness.MODEL)
                .temperature(0.0).numPredict(N).timeout(Duration.ofSeconds(60)).maxRetries(0).build();
        Response<String> r = model.generate(PROMPT);
        assertEquals(expected.text(), r.content());
        assertEquals(expected.generatedIds().length, r.tokenUsage().outputTokenCount());
    }

    @Test
    void streamingCompletion() throws Exception {
        StreamingLanguageModel model = OllamaStreamingLanguageModel.builder().baseUrl(h.server.address())
                .modelName(ServerHarness.MODEL).temperature(0.0).numPredict(N).timeout(Duration.ofSeconds(60)).build();
        StringBuilder pieces = new StringBuilder();
        CompletableFuture<Response<String>> done = new CompletableFuture<>();
        model.generate(PROMPT, new dev.langchain4j.model.StreamingResponseHandler<String>() {
            public void onNext(String token) { pieces.append(token); }
            public void onComplete(Response<String> response) { done.complete(response); }
            public void onError(Throwable error) { done.completeExceptionally(error); }
        });
        Response<String> r = done.get(60, TimeUnit.SECONDS);
        assertEquals(expected.text(), pieces.toString());
        assertEquals(expected.generatedIds().length, r.tokenUsage().outputTokenCount());
    }
}
