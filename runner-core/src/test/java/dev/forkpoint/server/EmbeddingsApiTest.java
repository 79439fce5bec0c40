package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadedModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The embedding routes of a live server ({@code /api/embed}, the legacy {@code /api/embeddings}, {@code /v1/embeddings})
 * against the engine loaded separately ({@link LoadedModel#embed}, itself checked against the float64 reference in
 * {@code EmbeddingReferenceTest}): the same vector on every route (the legacy one unnormalised), batches equal to
 * their inputs one by one, {@code dimensions}, {@code truncate}, the errors.
 */
class EmbeddingsApiTest {
    static ServerHarness h;
    static final String M = ServerHarness.MODEL;

    @BeforeAll
    static void start() {
        h = ServerHarness.allApis(ServerHarness.config().withMaxBodyBytes(1 << 20));
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    private static String q(String s) { return OllamaApiTest.quote(s); }

    /** The engine's raw vector of a text (BOS added as the model says). */
    private static float[] raw(String text) {
        LoadedModel m = h.reference();
        return m.embed(m.tokenizer().encode(text, true, true), 512);
    }

    private static float[] vector(JsonNode array) {
        float[] v = new float[array.size()];
        for (int i = 0; i < v.length; i++) v[i] = (float) array.get(i).asDouble();
        return v;
    }

    private static void near(float[] expected, float[] actual, double bound, String what) {
        assertEquals(expected.length, actual.length, what + ": length");
        for (int i = 0; i < expected.length; i++) {
            assertTrue(Math.abs(expected[i] - actual[i]) <= bound, what + ": component " + i + " " + actual[i] + " vs " + expected[i]);
        }
    }

    private static double norm(float[] v) {
        double s = 0;
        for (float x : v) s += (double) x * x;
        return Math.sqrt(s);
    }

    private static double cosine(float[] a, float[] b) {
        double d = 0;
        for (int i = 0; i < a.length; i++) d += (double) a[i] * b[i];
        return d / (norm(a) * norm(b));
    }

    private static JsonNode embed(String body) throws Exception { return h.postJson("/api/embed", body); }

    @Test
    void apiEmbedIsTheEnginesLastTokenStateNormalised() throws Exception {
        String text = "Once upon a time";
        JsonNode r = embed("{\"model\":\"" + M + "\",\"input\":" + q(text) + "}");
        assertEquals(h.served().name(), r.get("model").asText());
        assertEquals(1, r.get("embeddings").size());
        float[] v = vector(r.get("embeddings").get(0));
        assertEquals(64, v.length, "the model's embedding length");
        assertEquals(1.0, norm(v), 1e-6);
        near(Embeddings.normalize(raw(text)), v, 1e-7, "/api/embed");
        assertEquals(h.tokens(text).length, r.get("prompt_eval_count").asInt());
        for (String f : List.of("total_duration", "load_duration")) assertTrue(r.get(f).canConvertToLong(), f + " in " + r);
    }

    @Test
    void identicalTextsHaveCosineOneAndABatchEqualsItsInputsOneByOne() throws Exception {
        List<String> texts = List.of("The cat sat.", "Lily went to the park with her mom.", "The cat sat.", "Ben");
        JsonNode batch = embed("{\"model\":\"" + M + "\",\"input\":" + ServerHarness.JSON.writeValueAsString(texts) + "}");
        assertEquals(texts.size(), batch.get("embeddings").size());
        int tokens = 0;
        for (int i = 0; i < texts.size(); i++) {
            float[] one = vector(embed("{\"model\":\"" + M + "\",\"input\":[" + q(texts.get(i)) + "]}").get("embeddings").get(0));
            float[] inBatch = vector(batch.get("embeddings").get(i));
            near(one, inBatch, 0, "input[" + i + "] in the batch and alone");
            tokens += h.tokens(texts.get(i)).length;
        }
        assertEquals(tokens, batch.get("prompt_eval_count").asInt());
        float[] a = vector(batch.get("embeddings").get(0)), c = vector(batch.get("embeddings").get(2));
        assertEquals(1.0, cosine(a, c), 1e-6, "identical texts");
        assertTrue(cosine(a, vector(batch.get("embeddings").get(1))) < 0.9999, "different texts differ");
    }

    @Test
    void theLegacyRouteReturnsTheUnnormalisedVectorAsOllamaDoes() throws Exception {
        String text = "The little dog";
        JsonNode legacy = h.postJson("/api/embeddings", "{\"model\":\"" + M + "\",\"prompt\":" + q(text) + "}");
        float[] v = vector(legacy.get("embedding"));
        near(raw(text), v, 0, "/api/embeddings");
        assertTrue(Math.abs(norm(v) - 1) > 1e-3, "not normalised: norm " + norm(v));
        float[] embed = vector(embed("{\"model\":\"" + M + "\",\"input\":" + q(text) + "}").get("embeddings").get(0));
        near(Embeddings.normalize(v), embed, 1e-7, "normalised legacy vector vs /api/embed");
        // an empty prompt only loads the model
        assertEquals(0, h.postJson("/api/embeddings", "{\"model\":\"" + M + "\",\"prompt\":\"\"}").get("embedding").size());
        assertEquals(0, embed("{\"model\":\"" + M + "\",\"input\":\"\"}").get("embeddings").size());
        assertEquals(0, embed("{\"model\":\"" + M + "\",\"input\":[]}").get("embeddings").size());
    }

    @Test
    void openAiEmbeddingsEqualApiEmbedAsFloatsAsBase64AndFromTokenIds() throws Exception {
        String a = "Once upon a time", b = "The sun was warm.";
        JsonNode r = h.postJson("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":[" + q(a) + "," + q(b) + "]}");
        assertEquals("list", r.get("object").asText());
        assertEquals(h.served().name(), r.get("model").asText());
        int tokens = h.tokens(a).length + h.tokens(b).length;
        assertEquals(tokens, r.get("usage").get("prompt_tokens").asInt());
        assertEquals(tokens, r.get("usage").get("total_tokens").asInt());
        JsonNode ollama = embed("{\"model\":\"" + M + "\",\"input\":[" + q(a) + "," + q(b) + "]}");
        for (int i = 0; i < 2; i++) {
            JsonNode d = r.get("data").get(i);
            assertEquals("embedding", d.get("object").asText());
            assertEquals(i, d.get("index").asInt());
            near(vector(ollama.get("embeddings").get(i)), vector(d.get("embedding")), 0, "/v1/embeddings vs /api/embed, input " + i);
        }
        // base64: little-endian float32
        JsonNode b64 = h.postJson("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":" + q(a) + ",\"encoding_format\":\"base64\"}");
        ByteBuffer bytes = ByteBuffer.wrap(Base64.getDecoder().decode(b64.get("data").get(0).get("embedding").asText())).order(ByteOrder.LITTLE_ENDIAN);
        float[] decoded = new float[bytes.remaining() / 4];
        for (int i = 0; i < decoded.length; i++) decoded[i] = bytes.getFloat();
        near(Embeddings.normalize(raw(a)), decoded, 0, "base64");
        // token ids: one list, and a list of lists
        int[] ids = h.tokens(a);
        String idList = ServerHarness.JSON.writeValueAsString(ids);
        JsonNode fromIds = h.postJson("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":" + idList + "}");
        near(decoded, vector(fromIds.get("data").get(0).get("embedding")), 0, "token ids");
        JsonNode lists = h.postJson("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":[" + idList + "," + ServerHarness.JSON.writeValueAsString(h.tokens(b)) + "]}");
        assertEquals(2, lists.get("data").size());
        near(vector(r.get("data").get(1).get("embedding")), vector(lists.get("data").get(1).get("embedding")), 0, "list of token lists");
    }

    @Test
    void dimensionsKeepTheFirstNComponentsRenormalised() throws Exception {
        String text = "Once upon a time";
        float[] full = Embeddings.normalize(raw(text));
        float[] expected = Embeddings.normalize(java.util.Arrays.copyOf(full, 16));
        JsonNode o = embed("{\"model\":\"" + M + "\",\"input\":" + q(text) + ",\"dimensions\":16}");
        float[] v = vector(o.get("embeddings").get(0));
        assertEquals(16, v.length);
        assertEquals(1.0, norm(v), 1e-6);
        near(expected, v, 1e-7, "dimensions 16");
        JsonNode oa = h.postJson("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":" + q(text) + ",\"dimensions\":16}");
        near(v, vector(oa.get("data").get(0).get("embedding")), 0, "OpenAI dimensions 16");
        assertEquals(64, embed("{\"model\":\"" + M + "\",\"input\":" + q(text) + ",\"dimensions\":64}").get("embeddings").get(0).size());
    }

    private static String longText() {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 200; i++) s.append("The little dog ran to the park and played with a red ball. ");
        return s.toString();
    }

    @Test
    void truncateCutsToNumCtxOrRefusesNamingTheInput() throws Exception {
        String text = longText();
        int[] all = h.tokens(text);
        assertTrue(all.length > 512, all.length + " tokens");
        JsonNode cut = embed("{\"model\":\"" + M + "\",\"input\":" + q(text) + ",\"options\":{\"num_ctx\":40}}");
        assertEquals(40, cut.get("prompt_eval_count").asInt());
        float[] expected = Embeddings.normalize(h.reference().embed(java.util.Arrays.copyOf(all, 40), 512));
        near(expected, vector(cut.get("embeddings").get(0)), 1e-7, "truncated to num_ctx 40");
        // the default context (stories260K's own, 2048) also cuts
        int numCtx = h.served().model().defaultNumCtx();
        assertTrue(all.length > numCtx, all.length + " tokens");
        assertEquals(numCtx, embed("{\"model\":\"" + M + "\",\"input\":[\"Hi\"," + q(text) + "]}").get("prompt_eval_count").asInt() - h.tokens("Hi").length);

        var refused = h.post("/api/embed", "{\"model\":\"" + M + "\",\"input\":[\"Hi\"," + q(text) + "],\"truncate\":false,\"options\":{\"num_ctx\":40}}");
        assertEquals(400, refused.statusCode(), refused.body());
        assertTrue(refused.body().contains("input[1] is " + text.length() + " characters, more than num_ctx 40 tokens can hold"), refused.body());
        String medium = text.substring(0, 200);   // under the characters' bound, over 40 tokens
        refused = h.post("/api/embed", "{\"model\":\"" + M + "\",\"input\":[\"Hi\"," + q(medium) + "],\"truncate\":false,\"options\":{\"num_ctx\":40}}");
        assertEquals(400, refused.statusCode(), refused.body());
        assertTrue(refused.body().contains("input[1] is " + h.tokens(medium).length + " tokens but num_ctx is 40; shorten it, raise num_ctx, or set truncate to true"), refused.body());
        var legacy = h.post("/api/embeddings", "{\"model\":\"" + M + "\",\"prompt\":" + q(text) + "}");
        assertEquals(400, legacy.statusCode(), legacy.body());
        assertTrue(legacy.body().contains("prompt is " + all.length + " tokens but num_ctx is " + numCtx), legacy.body());
        var openai = h.post("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":" + q(text) + "}");
        assertEquals(400, openai.statusCode(), openai.body());
        assertEquals("input", ServerHarness.json(openai.body()).get("error").get("param").asText());
    }

    @Test
    void badInputIsA400NamingTheFieldAndValue() throws Exception {
        record Case(String path, String body, String says) {}
        for (Case c : List.of(
                new Case("/api/embed", "{\"model\":\"" + M + "\",\"input\":42}", "input must be a string or an array of strings, got number 42"),
                new Case("/api/embed", "{\"model\":\"" + M + "\",\"input\":[\"a\",3]}", "input[1] must be a string"),
                new Case("/api/embed", "{\"model\":\"" + M + "\",\"input\":\"a\",\"dimensions\":-1}", "dimensions must be between 1 and the model's embedding length 64, got -1"),
                new Case("/api/embed", "{\"model\":\"" + M + "\",\"input\":\"a\",\"dimensions\":65}", "got 65"),
                new Case("/api/embed", "{\"model\":\"" + M + "\",\"input\":\"a\",\"options\":{\"num_ctx\":100000}}", "num_ctx must be in [1, 2048]"),
                new Case("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":\"a\",\"encoding_format\":\"hex\"}", "encoding_format must be \\\"float\\\" or \\\"base64\\\", got string \\\"hex\\\""),
                new Case("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":[1,600]}", "input[1] is token id 600, outside the model's vocabulary of 512"),
                new Case("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":[[1,2],[1,-3]]}", "input[1][1] must be a token id"),
                new Case("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":\"\"}", "input must not be an empty string"),
                new Case("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":[]}", "input must not be empty"),
                new Case("/v1/embeddings", "{\"model\":\"" + M + "\"}", "input is required"),
                new Case("/v1/embeddings", "{\"model\":\"" + M + "\",\"input\":{\"a\":1}}", "input must be a string, an array of strings"))) {
            var r = h.post(c.path(), c.body());
            assertEquals(400, r.statusCode(), c + " → " + r.body());
            assertTrue(r.body().contains(c.says()), c + " → " + r.body());
        }
        var unknown = h.post("/api/embed", "{\"model\":\"no-such-model\",\"input\":\"a\"}");
        assertEquals(404, unknown.statusCode(), unknown.body());
    }

    @Test
    void embeddingsShareTheModelWithARunningGenerationAndLeaveTheCacheAlone() throws Exception {
        GenerationResult ref = h.greedy("Once upon a time", 200);
        CompletableFuture<JsonNode> gen = CompletableFuture.supplyAsync(() -> {
            try {
                return h.postJson("/api/generate", "{\"model\":\"" + M + "\",\"prompt\":\"Once upon a time\",\"raw\":true,\"stream\":false,"
                        + "\"options\":{\"temperature\":0,\"num_predict\":200}}");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        float[] expected = Embeddings.normalize(raw("The little dog"));
        for (int i = 0; i < 10; i++) {
            near(expected, vector(embed("{\"model\":\"" + M + "\",\"input\":\"The little dog\"}").get("embeddings").get(0)), 1e-7, "embedding " + i);
        }
        assertEquals(ref.text(), gen.get().get("response").asText(), "the generation is unaffected");
        // alone, embeddings leave the prefix cache exactly as it was
        var cached = h.served().model().cacheStats();
        embed("{\"model\":\"" + M + "\",\"input\":[\"Once upon a time there was\",\"The little dog\"]}");
        h.postJson("/api/embeddings", "{\"model\":\"" + M + "\",\"prompt\":\"Once upon a time there was\"}");
        assertEquals(cached, h.served().model().cacheStats());
    }

    @Test
    void langchain4jEmbeddingModelsForOllamaAndOpenAiReceiveTheVectors() {
        var ollama = dev.langchain4j.model.ollama.OllamaEmbeddingModel.builder().baseUrl(h.url()).modelName(M)
                .timeout(java.time.Duration.ofSeconds(60)).maxRetries(0).build();
        var openai = dev.langchain4j.model.openai.OpenAiEmbeddingModel.builder().baseUrl(h.url() + "/v1").apiKey("unused")
                .modelName(M).timeout(java.time.Duration.ofSeconds(60)).maxRetries(0).build();
        List<dev.langchain4j.data.segment.TextSegment> segments = List.of(
                dev.langchain4j.data.segment.TextSegment.from("Once upon a time"), dev.langchain4j.data.segment.TextSegment.from("The little dog"));
        var fromOllama = ollama.embedAll(segments).content();
        var fromOpenAi = openai.embedAll(segments).content();
        assertEquals(2, fromOllama.size());
        assertEquals(2, fromOpenAi.size());
        for (int i = 0; i < 2; i++) {
            float[] expected = Embeddings.normalize(raw(segments.get(i).text()));
            near(expected, fromOllama.get(i).vector(), 1e-7, "langchain4j-ollama " + i);
            near(expected, fromOpenAi.get(i).vector(), 1e-7, "langchain4j-open-ai " + i);
        }
        assertEquals(64, ollama.dimension());
    }
}
