package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ChatTemplate;
import dev.forkpoint.engine.GenerationResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Multi-turn chats through all three APIs on a model with a real chat template (Qwen2.5's, {@link TemplateModel}):
 * turn 2 sends turn 1's reply back and must evaluate only what the prefix cache does not hold, reporting the rest in
 * the API's cache field (Ollama {@code prompt_cache_count}, OpenAI {@code prompt_tokens_details.cached_tokens},
 * Anthropic {@code cache_read_input_tokens}).
 *
 * <p>The expectation is computed independently: the prompts are rendered from the template resource (not the model
 * file) and tokenized; after turn 1 (ended by max tokens) the cache holds turn 1's prompt tokens and its generated ids
 * but the last (sampled, never evaluated); turn 2 reuses the common prefix of that and its own prompt tokens (at most
 * all but its last token, whose logits are needed), and evaluates the rest.
 */
class MultiTurnCacheTest {
    static final int TURN1 = 20;

    @TempDir
    static Path dir;
    static ServerHarness h;

    @BeforeAll
    static void start() throws Exception {
        h = ServerHarness.allApis(ServerHarness.config(), TemplateModel.write(dir));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    static String q(String s) { return OllamaApiTest.quote(s); }

    /** Turn 1's expected reply and turn 2's expected reused (cached) and evaluated prompt tokens. */
    record Expected(String reply, int cached, int evaluated, int turn1Prompt) {}

    static Expected expect(String u1, String u2) throws Exception {
        ChatTemplate qwen = ChatTemplate.of(TemplateModel.qwenTemplate(), h.reference().tokenizer());
        String prompt1 = qwen.render(List.of(ChatMessage.of("user", u1)), List.of(), true).prompt();
        GenerationResult turn1 = h.greedy(prompt1, TURN1);
        assertEquals("length", turn1.doneReason(), "the test needs a turn 1 cut by max tokens");
        String prompt2 = qwen.render(List.of(ChatMessage.of("user", u1), ChatMessage.of("assistant", turn1.text()),
                ChatMessage.of("user", u2)), List.of(), true).prompt();
        int cached = h.expectedReuse(prompt1, turn1, prompt2);
        return new Expected(turn1.text(), cached, h.tokens(prompt2).length - cached, h.tokens(prompt1).length);
    }

    static void check(Expected e, int cached, int evaluated) {
        assertTrue(e.cached() >= e.turn1Prompt(), "turn 2 starts with all of turn 1's prompt: " + e);
        assertEquals(e.cached(), cached, "cached tokens");
        assertEquals(e.evaluated(), evaluated, "evaluated tokens");
    }

    @Test
    void ollama() throws Exception {
        String u1 = "Tom had a red ball.", u2 = "What did Tom do next?";
        Expected e = expect(u1, u2);
        h.probe().evictCache();
        String head = "{\"model\":\"" + TemplateModel.FILE + "\",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":";
        JsonNode r1 = h.postJson("/api/chat", head + TURN1 + "},\"messages\":[{\"role\":\"user\",\"content\":" + q(u1) + "}]}");
        assertEquals(e.reply(), r1.get("message").get("content").asText());
        JsonNode r2 = h.postJson("/api/chat", head + "4},\"messages\":[{\"role\":\"user\",\"content\":" + q(u1) + "},"
                + "{\"role\":\"assistant\",\"content\":" + q(r1.get("message").get("content").asText()) + "},"
                + "{\"role\":\"user\",\"content\":" + q(u2) + "}]}");
        check(e, r2.get("prompt_cache_count").asInt(), r2.get("prompt_eval_count").asInt());
    }

    @Test
    void openAi() throws Exception {
        String u1 = "Lily saw a big dog.", u2 = "Was the dog happy?";
        Expected e = expect(u1, u2);
        h.probe().evictCache();
        String head = "{\"model\":\"" + TemplateModel.FILE + "\",\"temperature\":0,\"max_tokens\":";
        JsonNode r1 = h.postJson("/v1/chat/completions", head + TURN1 + ",\"messages\":[{\"role\":\"user\",\"content\":" + q(u1) + "}]}");
        String reply = r1.get("choices").get(0).get("message").get("content").asText();
        assertEquals(e.reply(), reply);
        JsonNode r2 = h.postJson("/v1/chat/completions", head + "4,\"messages\":[{\"role\":\"user\",\"content\":" + q(u1) + "},"
                + "{\"role\":\"assistant\",\"content\":" + q(reply) + "},{\"role\":\"user\",\"content\":" + q(u2) + "}]}");
        JsonNode usage = r2.get("usage");
        int cached = usage.get("prompt_tokens_details").get("cached_tokens").asInt();
        check(e, cached, usage.get("prompt_tokens").asInt() - cached);
    }

    @Test
    void anthropic() throws Exception {
        String u1 = "The cat sat in the sun.", u2 = "Then what happened?";
        Expected e = expect(u1, u2);
        h.probe().evictCache();
        String head = "{\"model\":\"" + TemplateModel.FILE + "\",\"temperature\":0,\"max_tokens\":";
        JsonNode r1 = h.postJson("/v1/messages", head + TURN1 + ",\"messages\":[{\"role\":\"user\",\"content\":" + q(u1) + "}]}");
        String reply = r1.get("content").get(0).get("text").asText();
        assertEquals(e.reply(), reply);
        assertEquals("max_tokens", r1.get("stop_reason").asText());
        JsonNode r2 = h.postJson("/v1/messages", head + "4,\"messages\":[{\"role\":\"user\",\"content\":" + q(u1) + "},"
                + "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":" + q(reply) + "}]},{\"role\":\"user\",\"content\":" + q(u2) + "}]}");
        JsonNode usage = r2.get("usage");
        check(e, usage.get("cache_read_input_tokens").asInt(), usage.get("input_tokens").asInt());
    }
}
