package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;

/**
 * The five generation endpoints the soak drives, each with its request body, how its replies (whole or streamed) are
 * read back into text, and the shape of its error bodies.
 */
enum Api {
    OLLAMA_GENERATE("ollama-generate", "/api/generate"),
    OLLAMA_CHAT("ollama-chat", "/api/chat"),
    OPENAI_CHAT("openai-chat", "/v1/chat/completions"),
    OPENAI_COMPLETIONS("openai-completions", "/v1/completions"),
    ANTHROPIC_MESSAGES("anthropic-messages", "/v1/messages");

    static final ObjectMapper JSON = new ObjectMapper();

    final String label;
    final String path;

    Api(String label, String path) {
        this.label = label;
        this.path = path;
    }

    boolean ollama() { return this == OLLAMA_GENERATE || this == OLLAMA_CHAT; }

    boolean openAi() { return this == OPENAI_CHAT || this == OPENAI_COMPLETIONS; }

    /** Takes a prompt string (generate, completions) rather than a list of messages. */
    boolean promptField() { return this == OLLAMA_GENERATE || this == OPENAI_COMPLETIONS; }

    /** A well-formed request: one user turn (or prompt), at most {@code maxTokens} tokens, the given sampling. */
    ObjectNode body(String model, String prompt, int maxTokens, boolean stream, double temperature, long seed) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", model);
        if (promptField()) {
            b.put("prompt", prompt);
        } else {
            b.putArray("messages").addObject().put("role", "user").put("content", prompt);
        }
        b.put("stream", stream);
        if (ollama()) {
            b.putObject("options").put("temperature", temperature).put("seed", seed);
        } else {
            b.put("temperature", temperature);
            if (openAi()) b.put("seed", seed);
        }
        setMaxTokens(b, IntNode.valueOf(maxTokens));
        return b;
    }

    /** Sets the token limit: {@code options.num_predict} (Ollama) or {@code max_tokens} (OpenAI, Anthropic), to any JSON value. */
    void setMaxTokens(ObjectNode body, JsonNode value) {
        if (ollama()) {
            JsonNode o = body.get("options");
            ObjectNode options = o instanceof ObjectNode on ? on : body.putObject("options");
            options.set("num_predict", value);
        } else {
            body.set("max_tokens", value);
        }
    }

    /** The headers that carry the API key in this API's usual way. */
    List<String> authHeaders(String apiKey) {
        if (apiKey == null) return List.of();
        return this == ANTHROPIC_MESSAGES ? List.of("x-api-key: " + apiKey, "anthropic-version: 2023-06-01")
                : List.of("Authorization: Bearer " + apiKey);
    }

    /**
     * A successful reply read back: the generated text, whether the reply ended as this API ends one (Ollama's
     * {@code "done": true}, OpenAI's {@code [DONE]}, Anthropic's {@code message_stop}; a whole JSON reply is always
     * finished), and an error the server reported inside a 200 (after streaming began), or null.
     */
    record Reply(String text, boolean finished, String error) {}

    /** Reads a 200 reply; null when it is not what this API sends (not JSON, wrong shape, broken framing). */
    Reply parse(byte[] body, boolean stream) {
        String text = new String(body, StandardCharsets.UTF_8);
        try {
            if (!stream) return parseWhole(JSON.readTree(text));
            return ollama() ? parseNdjson(text) : parseSse(text);
        } catch (JsonProcessingException | RuntimeException e) {
            return null;
        }
    }

    private Reply parseWhole(JsonNode n) {
        if (n == null || !n.isObject()) return null;
        return switch (this) {
            case OLLAMA_GENERATE -> n.has("response") ? new Reply(n.get("response").asText(), n.path("done").asBoolean(false), null) : null;
            case OLLAMA_CHAT -> n.has("message") ? new Reply(n.path("message").path("content").asText(""), n.path("done").asBoolean(false), null) : null;
            case OPENAI_CHAT -> n.path("choices").isArray() && !n.path("choices").isEmpty()
                    ? new Reply(n.path("choices").get(0).path("message").path("content").asText(""), true, null) : null;
            case OPENAI_COMPLETIONS -> n.path("choices").isArray() && !n.path("choices").isEmpty()
                    ? new Reply(n.path("choices").get(0).path("text").asText(""), true, null) : null;
            case ANTHROPIC_MESSAGES -> {
                if (!"message".equals(n.path("type").asText()) || !n.path("content").isArray()) yield null;
                StringBuilder sb = new StringBuilder();
                for (JsonNode block : n.get("content")) if ("text".equals(block.path("type").asText())) sb.append(block.path("text").asText());
                yield new Reply(sb.toString(), true, null);
            }
        };
    }

    private Reply parseNdjson(String text) throws JsonProcessingException {
        StringBuilder sb = new StringBuilder();
        boolean done = false;
        String error = null;
        for (String line : text.split("\n")) {
            if (line.isBlank()) continue;
            JsonNode n = JSON.readTree(line);
            if (n.has("error")) {
                error = n.get("error").isTextual() ? n.get("error").asText() : n.get("error").toString();
                continue;
            }
            sb.append(this == OLLAMA_GENERATE ? n.path("response").asText("") : n.path("message").path("content").asText(""));
            if (n.path("done").asBoolean(false)) done = true;
        }
        return new Reply(sb.toString(), done, error);
    }

    private Reply parseSse(String text) throws JsonProcessingException {
        StringBuilder sb = new StringBuilder();
        boolean done = false;
        String error = null;
        for (String event : text.replace("\r\n", "\n").split("\n\n")) {
            String name = null;
            StringBuilder data = new StringBuilder();
            for (String line : event.split("\n")) {
                if (line.startsWith("event:")) name = line.substring(6).trim();
                else if (line.startsWith("data:")) data.append(line.substring(5).trim());
            }
            if (data.isEmpty()) continue;   // comments (": keep-alive")
            if (openAi() && data.toString().equals("[DONE]")) {
                done = true;
                continue;
            }
            JsonNode n = JSON.readTree(data.toString());
            if ("error".equals(name) || n.has("error")) {
                JsonNode e = n.path("error");
                error = e.isTextual() ? e.asText() : e.path("message").asText(e.toString());
                continue;
            }
            if (openAi()) {
                JsonNode c = n.path("choices").path(0);
                sb.append(this == OPENAI_CHAT ? c.path("delta").path("content").asText("") : c.path("text").asText(""));
            } else if ("content_block_delta".equals(name)) {
                sb.append(n.path("delta").path("text").asText(""));
            } else if ("message_stop".equals(name)) {
                done = true;
            }
        }
        return new Reply(sb.toString(), done, error);
    }

    /**
     * Whether {@code body} is an error in this API's shape: Ollama {@code {"error": "…"}}, OpenAI
     * {@code {"error": {"message": "…", "type": "…"}}}, Anthropic {@code {"type": "error", "error": {"type", "message"}}}.
     */
    boolean isErrorShape(byte[] body) {
        JsonNode n;
        try {
            n = JSON.readTree(body);
        } catch (java.io.IOException e) {
            return false;
        }
        if (n == null || !n.isObject()) return false;
        JsonNode e = n.path("error");
        if (ollama()) return e.isTextual() && !e.asText().isBlank();
        if (openAi()) return e.isObject() && e.path("message").isTextual() && e.path("type").isTextual();
        return "error".equals(n.path("type").asText()) && e.isObject() && e.path("type").isTextual() && e.path("message").isTextual();
    }

    static Api byLabel(String label) {
        for (Api a : values()) if (a.label.equals(label.toLowerCase(Locale.ROOT))) return a;
        throw new IllegalArgumentException("unknown API " + label);
    }
}
