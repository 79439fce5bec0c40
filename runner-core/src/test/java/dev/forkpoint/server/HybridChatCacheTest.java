package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.HybridTestModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three-turn chats on a hybrid model (the tiny Qwen3.5 with Qwen2.5's ChatML template) through Ollama's
 * {@code /api/chat} and Anthropic's {@code /v1/messages}: the recurrent state is restored from the checkpoint at the
 * end of the previous reply, so each turn evaluates only its new tokens + 1 (the previous reply's last token was
 * sampled, never evaluated) and reports the rest as cached.
 */
class HybridChatCacheTest {
    @TempDir
    static Path dir;
    static ServerHarness h;
    static String model;

    @BeforeAll
    static void start() throws Exception {
        Path folder = HybridTestModel.write(dir, "dense", 8192, true);
        model = folder.getFileName().toString();
        h = ServerHarness.allApis(ServerHarness.config(), folder);
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    static String q(String s) { return OllamaApiTest.quote(s); }

    static final String[] USER = {"Tell me about the river and the old mill by the bridge.", "And what about the miller?", "Did the mill ever close?"};

    /** Checks turn t's counts: turn 1 evaluates everything; later turns at most what is new since the last reply + 1. */
    static void check(int turn, int promptTokens, int cached, int evaluated, int previousPrompt, int previousReply) {
        check(turn, promptTokens, cached, evaluated, previousPrompt, previousReply, true);
    }

    /**
     * {@code replyReencodes}: whether the client's copy of the reply renders back to the tokens generated; when not
     * (Anthropic's text blocks are re-rendered by the template and may tokenize differently), the turn resumes at the
     * checkpoint of the previous prompt's end instead, and evaluates at most the reply besides.
     */
    static void check(int turn, int promptTokens, int cached, int evaluated, int previousPrompt, int previousReply, boolean replyReencodes) {
        System.out.printf("hybrid chat turn %d: prompt %d, cached %d, evaluated %d%n", turn, promptTokens, cached, evaluated);
        if (turn == 1) {   // only the template's system preamble can be cached (another test's chat shares it)
            assertTrue(evaluated >= promptTokens - 40 && evaluated >= 1, "turn 1: cached " + cached + ", evaluated " + evaluated);
            return;
        }
        int newTokens = promptTokens - previousPrompt - previousReply;
        assertTrue(evaluated <= newTokens + 1 + (replyReencodes ? 0 : previousReply), "turn " + turn + ": evaluated " + evaluated + ", new tokens " + newTokens);
        assertTrue(cached >= previousPrompt, "turn " + turn + ": the previous prompt is reused whole (" + cached + " < " + previousPrompt + ")");
    }

    @Test
    void ollamaChatTurnsEvaluateTheirNewTokensPlusOne() throws Exception {
        List<String> messages = new ArrayList<>();
        int previousPrompt = 0, previousReply = 0;
        for (int turn = 1; turn <= 3; turn++) {
            messages.add("{\"role\":\"user\",\"content\":" + q(USER[turn - 1]) + "}");
            JsonNode r = h.postJson("/api/chat", "{\"model\":\"" + model + "\",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":8},"
                    + "\"messages\":[" + String.join(",", messages) + "]}");
            int prompt = r.get("prompt_eval_count").asInt() + r.get("prompt_cache_count").asInt();
            check(turn, prompt, r.get("prompt_cache_count").asInt(), r.get("prompt_eval_count").asInt(), previousPrompt, previousReply);
            previousPrompt = prompt;
            previousReply = r.get("eval_count").asInt();
            messages.add("{\"role\":\"assistant\",\"content\":" + q(r.get("message").get("content").asText()) + "}");
        }
    }

    @Test
    void anthropicMessagesTurnsEvaluateTheirNewTokensPlusOne() throws Exception {
        List<String> messages = new ArrayList<>();
        int previousPrompt = 0, previousReply = 0;
        for (int turn = 1; turn <= 3; turn++) {
            messages.add("{\"role\":\"user\",\"content\":" + q(USER[3 - turn]) + "}");
            JsonNode r = h.postJson("/v1/messages", "{\"model\":\"" + model + "\",\"temperature\":0,\"max_tokens\":8,"
                    + "\"messages\":[" + String.join(",", messages) + "]}");
            JsonNode usage = r.get("usage");
            int cached = usage.get("cache_read_input_tokens").asInt(), evaluated = usage.get("input_tokens").asInt();
            check(turn, cached + evaluated, cached, evaluated, previousPrompt, previousReply, false);
            previousPrompt = cached + evaluated;
            previousReply = usage.get("output_tokens").asInt();
            messages.add("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":" + q(r.get("content").get(0).get("text").asText()) + "}]}");
        }
    }
}
