package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.TokenLogprob;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Log-probabilities through the engine and every API, checked against an independent float64 log-softmax of the
 * logits of each generated prefix ({@link LoadedModel#logits}, a fresh sequence per prefix): values within 1e-4, the
 * top lists the most likely ids in descending order, the chosen token's value equal to its entry there, streamed
 * responses carrying the same values as non-streamed ones.
 */
class LogprobsTest {
    static final String PROMPT = "Once upon a time";
    static final int N = 10;
    static final double TOL = 1e-4;
    static ServerHarness h;
    /** The greedy continuation of PROMPT: ids, and per step the float64 log-softmax of the logits. */
    static int[] ids;
    static double[][] expected;

    @BeforeAll
    static void start() {
        h = ServerHarness.allApis(ServerHarness.config());
        GenerationResult r = h.greedy(PROMPT, N);
        ids = r.generatedIds();
        expected = expectedLogSoftmax(h.tokens(PROMPT), ids, 1.0);
    }

    @AfterAll
    static void stop() {
        if (h != null) h.close();
    }

    /** Per generated position: log-softmax in double of the model's logits (divided by T) after the prompt and the ids before it. */
    static double[][] expectedLogSoftmax(int[] prompt, int[] generated, double temperature) {
        LoadedModel m = h.reference();
        double[][] out = new double[generated.length][];
        for (int i = 0; i < generated.length; i++) {
            int[] prefix = Arrays.copyOf(prompt, prompt.length + i);
            System.arraycopy(generated, 0, prefix, prompt.length, i);
            float[] logits = m.logits(prefix);
            double max = Double.NEGATIVE_INFINITY;
            for (float l : logits) max = Math.max(max, l / temperature);
            double sum = 0;
            for (float l : logits) sum += Math.exp(l / temperature - max);
            double lse = max + Math.log(sum);
            double[] lp = new double[logits.length];
            for (int v = 0; v < logits.length; v++) lp[v] = logits[v] / temperature - lse;
            out[i] = lp;
        }
        return out;
    }

    /** The k most likely ids of one position, most likely first (ties: lower id). */
    static int[] topIds(double[] lp, int k) {
        return IntStream.range(0, lp.length).boxed()
                .sorted(Comparator.<Integer>comparingDouble(v -> -lp[v]).thenComparingInt(v -> v))
                .limit(k).mapToInt(Integer::intValue).toArray();
    }

    static String text(int id) {
        return new String(h.reference().tokenizer().tokenBytes(id), StandardCharsets.UTF_8);
    }

    // ---- the engine ----

    @Test
    void engineGreedyMatchesTheFloat64LogSoftmax() {
        GenerationResult r = h.reference().generate(GenerationRequest.of(PROMPT, SamplingOptions.greedy().withNumPredict(N))
                .withTopLogprobs(5), p -> { });
        assertEquals(Arrays.toString(ids), Arrays.toString(r.generatedIds()), "logprobs must not change the tokens");
        checkEngine(r, expected, 5, true);
    }

    @Test
    void engineSamplingReportsTheTemperatureScaledDistributionBeforePenaltiesAndFilters() {
        SamplingOptions o = SamplingOptions.defaults().withTemperature(0.7).withSeed(42).withRepeatPenalty(1.3).withNumPredict(N);
        GenerationResult plain = h.reference().generate(GenerationRequest.of(PROMPT, o), p -> { });
        GenerationResult r = h.reference().generate(GenerationRequest.of(PROMPT, o).withTopLogprobs(3), p -> { });
        assertEquals(Arrays.toString(plain.generatedIds()), Arrays.toString(r.generatedIds()), "logprobs must not change the draws");
        checkEngine(r, expectedLogSoftmax(h.tokens(PROMPT), r.generatedIds(), 0.7), 3, false);
    }

    @Test
    void engineZeroListsOnlyTheChosenToken() {
        GenerationResult r = h.reference().generate(GenerationRequest.of(PROMPT, SamplingOptions.greedy().withNumPredict(4))
                .withTopLogprobs(0), p -> { });
        assertEquals(4, r.logprobs().size());
        for (TokenLogprob e : r.logprobs()) assertTrue(e.top().isEmpty());
        GenerationResult off = h.reference().generate(GenerationRequest.of(PROMPT, SamplingOptions.greedy().withNumPredict(4)), p -> { });
        assertTrue(off.logprobs().isEmpty());
    }

    @Test
    void engineRefusesOutOfRangeTopLogprobs() {
        for (int bad : new int[] {-2, 21}) {
            var e = assertThrows(InvalidInputException.class, () -> h.reference().generate(
                    GenerationRequest.of(PROMPT, SamplingOptions.greedy().withNumPredict(2)).withTopLogprobs(bad), p -> { }));
            assertTrue(e.getMessage().contains("top_logprobs") && e.getMessage().contains(String.valueOf(bad)), e.getMessage());
        }
    }

    @Test
    void aStopStringKeepsTheTokensOfTheTextReturned() {
        GenerationResult full = h.greedy(PROMPT, N);
        String stop = full.text().substring(full.text().length() / 2, full.text().length() / 2 + 2);
        GenerationResult r = h.reference().generate(GenerationRequest.of(PROMPT, SamplingOptions.greedy().withNumPredict(N)
                .withStop(List.of(stop))).withTopLogprobs(0), p -> { });
        assertEquals("stop", r.doneReason());
        StringBuilder joined = new StringBuilder();
        for (TokenLogprob e : r.logprobs()) joined.append(e.token());
        // every token listed contributes text that was returned (the last may run into the stop), none lies wholly in it
        assertTrue(joined.toString().startsWith(r.text()), joined + " / " + r.text());
        String withoutLast = joined.substring(0, joined.length() - r.logprobs().getLast().token().length());
        assertTrue(withoutLast.length() < r.text().length(), withoutLast + " / " + r.text());
    }

    private static void checkEngine(GenerationResult r, double[][] want, int k, boolean greedy) {
        assertEquals(r.generatedIds().length, r.logprobs().size());
        for (int i = 0; i < r.logprobs().size(); i++) {
            TokenLogprob e = r.logprobs().get(i);
            int id = r.generatedIds()[i];
            assertEquals(id, e.id());
            assertEquals(want[i][id], e.logprob(), TOL, "token " + i);
            assertEquals(text(id), e.token());
            int[] top = topIds(want[i], k);
            assertEquals(k, e.top().size());
            for (int j = 0; j < k; j++) {
                assertEquals(top[j], e.top().get(j).id(), "rank " + j + " at token " + i);
                assertEquals(want[i][top[j]], e.top().get(j).logprob(), TOL);
                if (j > 0) assertTrue(e.top().get(j - 1).logprob() >= e.top().get(j).logprob());
                if (top[j] == id) assertEquals(e.logprob(), e.top().get(j).logprob(), 0.0);
            }
            if (greedy) assertEquals(id, e.top().getFirst().id());
        }
    }

    // ---- the APIs: each against the same reference ----

    /** Checks one API's entries (token text, value, top list of (token, value) as that API shapes it). */
    private static void checkEntries(List<JsonNode> entries, String topField, boolean topIsMap, int k) {
        assertEquals(ids.length, entries.size());
        for (int i = 0; i < ids.length; i++) {
            JsonNode e = entries.get(i);
            assertEquals(text(ids[i]), e.get("token").asText());
            assertEquals(expected[i][ids[i]], e.get("logprob").asDouble(), TOL, "token " + i);
            int[] top = topIds(expected[i], k);
            JsonNode list = e.get(topField);
            assertEquals(k, list.size(), e.toString());
            for (int j = 0; j < k; j++) {
                JsonNode t = list.get(j);
                assertEquals(text(top[j]), t.get("token").asText());
                assertEquals(expected[i][top[j]], t.get("logprob").asDouble(), TOL);
            }
            assertEquals(e.get("logprob").asDouble(), list.get(0).get("logprob").asDouble(), 0.0, "greedy: the chosen token leads");
        }
    }

    private static void checkBytes(JsonNode e) {
        byte[] b = e.get("token").asText().getBytes(StandardCharsets.UTF_8);
        JsonNode bytes = e.get("bytes");
        assertEquals(b.length, bytes.size(), e.toString());
        for (int i = 0; i < b.length; i++) assertEquals(b[i] & 0xFF, bytes.get(i).asInt());
    }

    private static List<JsonNode> list(JsonNode array) {
        List<JsonNode> out = new ArrayList<>();
        if (array != null) array.forEach(out::add);
        return out;
    }

    @Test
    void ollamaGenerateStreamedAndNot() throws Exception {
        String body = "{\"model\":\"" + ServerHarness.MODEL + "\",\"prompt\":\"" + PROMPT + "\",\"raw\":true,\"logprobs\":true,"
                + "\"top_logprobs\":3,\"options\":{\"temperature\":0,\"num_predict\":" + N + "},\"stream\":";
        JsonNode whole = h.postJson("/api/generate", body + "false}");
        List<JsonNode> entries = list(whole.get("logprobs"));
        checkEntries(entries, "top_logprobs", false, 3);
        entries.forEach(LogprobsTest::checkBytes);
        List<JsonNode> streamed = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        for (JsonNode line : h.postLines("/api/generate", body + "true}")) {
            text.append(line.path("response").asText());
            streamed.addAll(list(line.get("logprobs")));
            StringBuilder pieceTokens = new StringBuilder();   // each chunk carries the entries of its own text
            for (JsonNode e : list(line.get("logprobs"))) pieceTokens.append(e.get("token").asText());
            assertEquals(line.path("response").asText(), pieceTokens.toString(), line.toString());
        }
        assertEquals(whole.get("response").asText(), text.toString());
        assertEquals(entries.toString(), streamed.toString(), "streamed entries == not streamed");
    }

    @Test
    void ollamaChatCarriesOneEntryPerGeneratedToken() throws Exception {
        JsonNode r = h.postJson("/api/chat", "{\"model\":\"" + ServerHarness.MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"logprobs\":true,\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":6}}");
        assertEquals(r.get("eval_count").asInt(), r.get("logprobs").size());
        StringBuilder joined = new StringBuilder();
        for (JsonNode e : r.get("logprobs")) {
            joined.append(e.get("token").asText());
            assertTrue(!e.has("top_logprobs"), "top_logprobs 0: none listed");
        }
        assertEquals(r.get("message").get("content").asText(), joined.toString());
    }

    @Test
    void openAiChatStreamedAndNot() throws Exception {
        // a raw prompt through chat is not possible: compare chat against the engine on the rendered chat prompt
        String rendered = h.render(dev.forkpoint.chat.ChatMessage.of("user", PROMPT));
        GenerationResult ref = h.greedy(rendered, N);
        double[][] want = expectedLogSoftmax(h.tokens(rendered), ref.generatedIds(), 1.0);
        String body = "{\"model\":\"" + ServerHarness.MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}],"
                + "\"max_tokens\":" + N + ",\"temperature\":0,\"logprobs\":true,\"top_logprobs\":2,\"stream\":";
        JsonNode whole = h.postJson("/v1/chat/completions", body + "false}");
        List<JsonNode> content = list(whole.get("choices").get(0).get("logprobs").get("content"));
        assertEquals(ref.generatedIds().length, content.size());
        for (int i = 0; i < content.size(); i++) {
            JsonNode e = content.get(i);
            int id = ref.generatedIds()[i];
            assertEquals(text(id), e.get("token").asText());
            assertEquals(want[i][id], e.get("logprob").asDouble(), TOL);
            checkBytes(e);
            int[] top = topIds(want[i], 2);
            for (int j = 0; j < 2; j++) {
                assertEquals(text(top[j]), e.get("top_logprobs").get(j).get("token").asText());
                assertEquals(want[i][top[j]], e.get("top_logprobs").get(j).get("logprob").asDouble(), TOL);
                checkBytes(e.get("top_logprobs").get(j));
            }
        }
        List<JsonNode> streamed = new ArrayList<>();
        for (var ev : h.postSse("/v1/chat/completions", body + "true}")) {
            if (ev.data().equals("[DONE]")) continue;
            JsonNode choice = ev.json().get("choices").get(0);
            if (choice.get("logprobs").isObject()) streamed.addAll(list(choice.get("logprobs").get("content")));
        }
        assertEquals(content.toString(), streamed.toString(), "streamed entries == not streamed");
    }

    @Test
    void openAiCompletionsStreamedAndNot() throws Exception {
        String body = "{\"model\":\"" + ServerHarness.MODEL + "\",\"prompt\":\"" + PROMPT + "\",\"max_tokens\":" + N
                + ",\"temperature\":0,\"logprobs\":2,\"stream\":";
        JsonNode whole = h.postJson("/v1/completions", body + "false}");
        JsonNode lp = whole.get("choices").get(0).get("logprobs");
        String text = whole.get("choices").get(0).get("text").asText();
        assertEquals(ids.length, lp.get("tokens").size());
        for (int i = 0; i < ids.length; i++) {
            assertEquals(text(ids[i]), lp.get("tokens").get(i).asText());
            assertEquals(expected[i][ids[i]], lp.get("token_logprobs").get(i).asDouble(), TOL);
            int offset = lp.get("text_offset").get(i).asInt();
            assertTrue(text.startsWith(text(ids[i]), offset), "text_offset " + offset + " of token " + i);
            JsonNode map = lp.get("top_logprobs").get(i);
            int[] top = topIds(expected[i], 2);
            for (int t : top) assertEquals(expected[i][t], map.get(text(t)).asDouble(), TOL);
        }
        JsonNode tokens = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.arrayNode(), lps = tokens.deepCopy(),
                offsets = tokens.deepCopy();
        for (var ev : h.postSse("/v1/completions", body + "true}")) {
            if (ev.data().equals("[DONE]")) continue;
            JsonNode l = ev.json().get("choices").get(0).get("logprobs");
            if (!l.isObject()) continue;
            ((com.fasterxml.jackson.databind.node.ArrayNode) tokens).addAll((com.fasterxml.jackson.databind.node.ArrayNode) l.get("tokens"));
            ((com.fasterxml.jackson.databind.node.ArrayNode) lps).addAll((com.fasterxml.jackson.databind.node.ArrayNode) l.get("token_logprobs"));
            ((com.fasterxml.jackson.databind.node.ArrayNode) offsets).addAll((com.fasterxml.jackson.databind.node.ArrayNode) l.get("text_offset"));
        }
        assertEquals(lp.get("tokens"), tokens);
        assertEquals(lp.get("token_logprobs"), lps);
        assertEquals(lp.get("text_offset"), offsets);
    }

    @Test
    void runnerProtocolPieces() throws Exception {
        List<JsonNode> entries = new ArrayList<>();
        for (JsonNode line : h.postLines("/v1/completions", "{\"Prompt\":\"" + PROMPT + "\",\"Options\":{\"temperature\":0,\"num_predict\":"
                + N + "},\"Logprobs\":true,\"TopLogprobs\":3}")) {
            entries.addAll(list(line.get("Logprobs")));
        }
        checkEntries(entries, "top_logprobs", false, 3);
    }

    @Test
    void outOfRangeFieldsAreRefusedNamingFieldAndValue() throws Exception {
        String m = "\"model\":\"" + ServerHarness.MODEL + "\"";
        record Case(String path, String body, String field, String value) {}
        for (Case c : List.of(
                new Case("/api/generate", "{" + m + ",\"prompt\":\"x\",\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs", "21"),
                new Case("/api/chat", "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true,\"top_logprobs\":-1}", "top_logprobs", "-1"),
                new Case("/v1/chat/completions", "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs", "21"),
                new Case("/v1/chat/completions", "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":3}", "top_logprobs", "logprobs: true"),
                new Case("/v1/completions", "{" + m + ",\"prompt\":\"x\",\"logprobs\":6}", "logprobs", "6"),
                new Case("/v1/completions", "{\"Prompt\":\"x\",\"Logprobs\":true,\"TopLogprobs\":21}", "TopLogprobs", "21"))) {
            var r = h.post(c.path(), c.body());
            assertEquals(400, r.statusCode(), c + " → " + r.body());
            assertTrue(r.body().contains(c.field()) && r.body().contains(c.value()), c + " → " + r.body());
        }
    }
}
