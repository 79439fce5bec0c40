package dev.forkpoint.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.engine.SyntheticLlama;
import dev.forkpoint.server.ServerConfig;
import dev.forkpoint.server.ServerHarness;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16's acceptance: a 20,000-token prompt through each of the three APIs on {@code serve --num-ctx 32768}, and
 * on {@code OLLAMA_CONTEXT_LENGTH=32768 serve}, succeeds, and a repeat reports its reuse in each API's cache fields;
 * {@code /api/ps} and {@code /api/show} report the context in effect; a request's num_ctx above the default is
 * honoured while the KV budget admits it and refused naming num_ctx and the budget beyond it; a default above the
 * model's trained context is clamped to it. The model: the synthetic Llama (one token per ASCII character) with a
 * 64k trained context, so the prompt's tokens are known without a tokenizer.
 */
class ServeLongContextTest {
    static final int TRAINED = 65_536, LONG = 20_000;

    @TempDir
    static Path root;
    static Path model;

    @BeforeAll
    static void write() throws Exception {
        model = SyntheticLlama.write(root.resolve("long.gguf"), TRAINED, 16);
    }

    static Map<String, String> env(String... pairs) {
        Map<String, String> env = new HashMap<>(Map.of("HOME", root.resolve("home").toString(),
                "OLLAMA_MODELS", root.resolve("ollama").toString(), "XDG_CACHE_HOME", root.resolve("cache").toString()));
        for (int i = 0; i < pairs.length; i += 2) env.put(pairs[i], pairs[i + 1]);
        return env;
    }

    /** The server {@code serve ARGS} starts under {@code env}, on a free port with one worker thread per model. */
    static ServerHarness serve(Map<String, String> env, String... args) {
        String[] all = new String[args.length + 6];
        System.arraycopy(new String[] {"--model", model.toString(), "--port", "0", "--threads", "2"}, 0, all, 0, 6);
        System.arraycopy(args, 0, all, 6, args.length);
        ServerConfig config = ServeArgs.parse(env, all).config();
        return new ServerHarness(config, model, ServeCommand.apis());
    }

    @Test
    void twentyThousandTokensThroughEveryApiWithNumCtxFlag() throws Exception {
        try (ServerHarness h = serve(env(), "--num-ctx", "32768", "--parallel", "1")) {
            everyApiTakesTwentyThousandTokens(h, 1, List.of(Api.OLLAMA, Api.OPENAI, Api.ANTHROPIC));
        }
    }

    @Test
    void twentyThousandTokensThroughEveryApiWithOllamaContextLength() throws Exception {
        try (ServerHarness h = serve(env("OLLAMA_CONTEXT_LENGTH", "32768", "OLLAMA_NUM_PARALLEL", "1"))) {
            everyApiTakesTwentyThousandTokens(h, 2, List.of(Api.ANTHROPIC, Api.OPENAI, Api.OLLAMA));
        }
    }

    /** What one API reports of a prompt: its reply, and its tokens reused from the cache and evaluated. */
    record Usage(String reply, int cached, int evaluated) {}

    /** The three APIs, each sending {@code prompt} as its only message (no chat template: the prompt is the content). */
    enum Api {
        OLLAMA {
            Usage send(ServerHarness h, String prompt) throws Exception {
                JsonNode r = h.postJson("/api/generate", ServerHarness.JSON.writeValueAsString(Map.of("model", "long.gguf", "prompt", prompt,
                        "stream", false, "options", Map.of("temperature", 0, "num_predict", REPLY))));
                assertEquals(REPLY, r.get("eval_count").asInt(), r.toString());
                return new Usage(r.get("response").asText(), r.get("prompt_cache_count").asInt(), r.get("prompt_eval_count").asInt());
            }
        },
        OPENAI {
            Usage send(ServerHarness h, String prompt) throws Exception {
                JsonNode r = h.postJson("/v1/chat/completions", ServerHarness.JSON.writeValueAsString(Map.of("model", "long.gguf",
                        "max_tokens", REPLY, "temperature", 0, "messages", List.of(Map.of("role", "user", "content", prompt)))));
                JsonNode usage = r.get("usage");
                assertEquals(REPLY, usage.get("completion_tokens").asInt(), r.toString());
                int cached = usage.get("prompt_tokens_details").get("cached_tokens").asInt();
                return new Usage(r.get("choices").get(0).get("message").get("content").asText(), cached, usage.get("prompt_tokens").asInt() - cached);
            }
        },
        ANTHROPIC {
            Usage send(ServerHarness h, String prompt) throws Exception {
                JsonNode r = h.postJson("/v1/messages", ServerHarness.JSON.writeValueAsString(Map.of("model", "long.gguf",
                        "max_tokens", REPLY, "temperature", 0, "messages", List.of(Map.of("role", "user", "content", prompt)))));
                JsonNode usage = r.get("usage");
                assertEquals(REPLY, usage.get("output_tokens").asInt(), r.toString());
                return new Usage(r.get("content").get(0).get("text").asText(), usage.get("cache_read_input_tokens").asInt(), usage.get("input_tokens").asInt());
            }
        };

        abstract Usage send(ServerHarness h, String prompt) throws Exception;
    }

    static final int REPLY = 3;
    static final char BOS = '\u0001';   // stands for the BOS token in the cache model below

    /**
     * The first API gets a 20,000-token prompt on a fresh server; each next one the same text with its own 40 characters
     * after it, so it reuses what the cache holds; every API sends its prompt twice. The expected reuse comes from a
     * model of the prefix cache: every finished request leaves BOS + prompt + reply but its last token (sampled, never
     * evaluated); a prompt reuses its longest common prefix with any of them, all but its own last token at most.
     */
    private static void everyApiTakesTwentyThousandTokens(ServerHarness h, long seed, List<Api> order) throws Exception {
        assertEquals(32768, h.served().model().defaultNumCtx());
        JsonNode ps = ServerHarness.json(h.get("/api/ps").body()).get("models").get(0);
        assertEquals(32768, ps.get("context_length").asInt(), ps.toString());
        JsonNode show = h.postJson("/api/show", "{\"model\":\"long.gguf\"}");
        assertEquals("num_ctx                        32768", show.get("parameters").asText());
        assertEquals(TRAINED, show.get("model_info").get("llama.context_length").asInt(), "model_info keeps the trained context");

        String common = SyntheticLlama.text(LONG, seed);
        List<String> cached = new ArrayList<>();
        for (int i = 0; i < order.size(); i++) {
            Api api = order.get(i);
            String prompt = i == 0 ? common : common + SyntheticLlama.text(40, seed * 10 + i);
            String tokens = BOS + prompt;
            assertTrue(tokens.length() >= LONG + 1 && tokens.length() + REPLY <= 32768);
            for (int turn = 0; turn < 2; turn++) {
                Usage u = api.send(h, prompt);
                int expected = 0;
                for (String c : cached) expected = Math.max(expected, commonPrefix(c, tokens));
                expected = Math.min(expected, tokens.length() - 1);
                assertEquals(tokens.length(), u.cached() + u.evaluated(), api + " turn " + turn + ": " + u);
                assertEquals(expected, u.cached(), api + " turn " + turn + ": " + u);
                if (i == 0 && turn == 0) assertEquals(0, u.cached(), "a fresh server");
                if (turn == 1) assertEquals(1, u.evaluated(), api + ": a repeat evaluates only its last token");
                assertEquals(REPLY, u.reply().length(), "one character per token: " + u);
                cached.add(tokens + u.reply().substring(0, REPLY - 1));
            }
        }
    }

    private static int commonPrefix(String a, String b) {
        int n = 0;
        while (n < a.length() && n < b.length() && a.charAt(n) == b.charAt(n)) n++;
        return n;
    }

    @Test
    void aRequestNumCtxAboveTheDefaultIsHonouredWhileTheBudgetAdmitsIt() throws Exception {
        // default 1024, parallel 1: the derived budget holds 2 × 1024 positions
        try (ServerHarness h = serve(env(), "--num-ctx", "1024", "--parallel", "1")) {
            String prompt = SyntheticLlama.text(1500, 7);
            HttpResponse<String> atDefault = h.post("/api/generate", body(prompt, 0, 2));
            assertEquals(400, atDefault.statusCode(), atDefault.body());
            assertTrue(atDefault.body().contains("prompt is 1501 tokens but num_ctx is 1024"), atDefault.body());
            HttpResponse<String> openai = h.post("/v1/chat/completions", "{\"model\":\"long.gguf\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}");
            assertEquals(400, openai.statusCode(), "OpenAI requests get the default context: " + openai.body());
            assertTrue(openai.body().contains("tokens but num_ctx is 1024; shorten the prompt or raise num_ctx"), openai.body());
            assertEquals("context_length_exceeded", ServerHarness.json(openai.body()).get("error").get("code").asText(), openai.body());

            JsonNode above = h.postJson("/api/generate", body(prompt, 1800, 2));
            assertEquals(1501, above.get("prompt_eval_count").asInt() + above.get("prompt_cache_count").asInt());
            assertEquals(2, above.get("eval_count").asInt());

            HttpResponse<String> beyond = h.post("/api/generate", body("hello", 4096, -1));
            assertEquals(400, beyond.statusCode(), beyond.body());
            String error = ServerHarness.json(beyond.body()).get("error").asText();
            assertTrue(error.contains("num_ctx 4096") && error.contains("but the KV budget is ")
                    && error.contains("derived: 2 sequences × the default num_ctx 1024"), error);
        }
    }

    private static String body(String prompt, int numCtx, int numPredict) throws Exception {
        return ServerHarness.JSON.writeValueAsString(Map.of("model", "long.gguf", "prompt", prompt, "stream", false,
                "options", Map.of("temperature", 0, "num_ctx", numCtx, "num_predict", numPredict)));
    }

    @Test
    void aDefaultAboveTheTrainedContextIsClampedToIt() throws Exception {
        try (ServerHarness h = serve(env(), "--num-ctx", "100000", "--parallel", "1")) {
            assertEquals(TRAINED, h.served().model().defaultNumCtx());
            assertEquals(TRAINED, ServerHarness.json(h.get("/api/ps").body()).get("models").get(0).get("context_length").asInt());
            assertEquals("num_ctx                        " + TRAINED, h.postJson("/api/show", "{\"model\":\"long.gguf\"}").get("parameters").asText());
        }
    }
}
