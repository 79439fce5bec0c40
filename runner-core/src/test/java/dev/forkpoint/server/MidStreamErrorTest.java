package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.chat.ChatMessage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A backend failure in the middle of a streamed generation (an injected fault in the 7th forward pass: 6 tokens have
 * been generated and streamed) ends each API's stream with its error chunk or event, with a one-line message and no
 * stack trace; the next request on the same server (same prompt: it reuses what the failed generation cached) gives
 * the engine's output.
 */
class MidStreamErrorTest {
    static final int N = 24;
    static final int FAILING_PASS = 7;
    static ServerHarness h;

    @BeforeAll
    static void start() {
        h = ServerHarness.allApis(ServerHarness.config());
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    private static void armFault() {
        h.probe().failAttentionCall(h.probe().attentionCallsPerPass() * (FAILING_PASS - 1) + 1);
    }

    private static String post(String path, String body) throws Exception {
        HttpResponse<String> r = h.post(path, body);
        assertEquals(200, r.statusCode(), "streaming had begun: " + r.body());
        return r.body();
    }

    /** The error message as a user sees it: one line, the internal error, no trace. */
    private static void userFacing(String message) {
        assertTrue(message.startsWith("internal error: ") && message.contains("injected fault"), message);
        assertFalse(message.contains("\n") || message.contains("\tat ") || message.contains("Exception") || message.contains("dev.forkpoint."),
                "no stack trace or class names: " + message);
    }

    private static String chatPrompt(String user) throws Exception {
        return h.render(List.of(ChatMessage.of("user", user)), List.of());
    }

    @Test
    void ollamaEndsWithAnErrorLine() throws Exception {
        String body = "{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"raw\":true,\"options\":{\"temperature\":0,\"num_predict\":" + N + "}}";
        armFault();
        List<JsonNode> lines = lines(post("/api/generate", body));
        JsonNode last = lines.getLast();
        assertEquals(1, last.size(), "the last line is {\"error\":…}: " + last);
        userFacing(last.get("error").asText());
        List<JsonNode> pieces = lines.subList(0, lines.size() - 1);
        assertFalse(pieces.isEmpty(), "text was streamed before the failure");
        for (JsonNode p : pieces) assertFalse(p.get("done").asBoolean(), "no done chunk: " + p);

        StringBuilder text = new StringBuilder();
        List<JsonNode> again = lines(post("/api/generate", body));
        for (JsonNode l : again) text.append(l.path("response").asText());
        assertTrue(again.getLast().get("done").asBoolean());
        assertEquals(h.greedy("Once upon a time", N).text(), text.toString());
    }

    @Test
    void openAiEndsWithAnErrorEventThenDone() throws Exception {
        String body = "{\"model\":\"stories260K\",\"stream\":true,\"temperature\":0,\"max_tokens\":" + N
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"Lily found a shell\"}]}";
        armFault();
        List<ServerHarness.Sse> events = ServerHarness.sse(post("/v1/chat/completions", body));
        assertEquals("[DONE]", events.getLast().data(), "[DONE] closes the stream");
        JsonNode error = events.get(events.size() - 2).json().get("error");
        assertTrue(error != null && error.isObject(), "the event before [DONE] is {\"error\":{…}}: " + events.get(events.size() - 2).data());
        userFacing(error.get("message").asText());
        assertEquals("server_error", error.get("type").asText());
        int pieces = 0;
        for (ServerHarness.Sse e : events.subList(0, events.size() - 2)) {
            JsonNode choice = e.json().get("choices").get(0);
            assertTrue(choice.get("finish_reason").isNull(), "no finish chunk: " + e.data());
            if (!choice.path("delta").path("content").asText("").isEmpty()) pieces++;
        }
        assertTrue(pieces > 0, "text was streamed before the failure");

        JsonNode ok = h.postJson("/v1/chat/completions", body.replace("\"stream\":true", "\"stream\":false"));
        assertEquals(h.greedy(chatPrompt("Lily found a shell"), N).text(), ok.get("choices").get(0).get("message").get("content").asText());
    }

    @Test
    void anthropicEndsWithAnErrorEvent() throws Exception {
        String body = "{\"model\":\"stories260K\",\"stream\":true,\"temperature\":0,\"max_tokens\":" + N
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"The dog ran\"}]}";
        armFault();
        List<ServerHarness.Sse> events = ServerHarness.sse(post("/v1/messages", body));
        ServerHarness.Sse last = events.getLast();
        assertEquals("error", last.event(), "the last event is an error: " + events);
        assertEquals("error", last.json().get("type").asText());
        assertEquals("api_error", last.json().get("error").get("type").asText());
        userFacing(last.json().get("error").get("message").asText());
        List<String> names = events.stream().map(ServerHarness.Sse::event).toList();
        assertFalse(names.contains("message_stop") || names.contains("message_delta"), "the message did not end normally: " + names);
        assertTrue(names.contains("content_block_delta"), "text was streamed before the failure: " + names);

        JsonNode ok = h.postJson("/v1/messages", body.replace("\"stream\":true", "\"stream\":false"));
        assertEquals(h.greedy(chatPrompt("The dog ran"), N).text(), ok.get("content").get(0).get("text").asText());
    }

    @Test
    void runnerProtocolEndsWithAnErrorLine() throws Exception {
        String body = "{\"Prompt\":\"Tom had a kite\",\"Options\":{\"temperature\":0,\"num_predict\":" + N + "}}";
        armFault();
        List<JsonNode> lines = lines(post("/v1/completions", body));
        JsonNode error = lines.getLast().get("Error");
        assertTrue(error != null, "the last line is {\"Error\":…}: " + lines.getLast());
        assertEquals(500, error.get("StatusCode").asInt());
        userFacing(error.get("error").asText());
        assertTrue(lines.size() > 1, "text was streamed before the failure");
        for (JsonNode l : lines.subList(0, lines.size() - 1)) assertFalse(l.get("Done").asBoolean(), l.toString());

        StringBuilder text = new StringBuilder();
        List<JsonNode> again = lines(post("/v1/completions", body));
        for (JsonNode l : again) text.append(l.path("Content").asText());
        assertTrue(again.getLast().get("Done").asBoolean(), again.getLast().toString());
        assertEquals(h.greedy("Tom had a kite", N).text(), text.toString());
    }

    private static List<JsonNode> lines(String body) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (String line : body.split("\n")) if (!line.isEmpty()) out.add(ServerHarness.JSON.readTree(line));
        return out;
    }
}
