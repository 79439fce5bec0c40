package dev.forkpoint.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.kvcache.SequenceKv;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import static dev.forkpoint.engine.Vectors.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Qwen3.5 tiny models (Hugging Face folders: Gated DeltaNet + gated attention, dense and mixture of experts)
 * against an independent float64 implementation's greedy run ({@code ../shared/reference/qwen35-tiny-*_greedy.json}):
 * ids in, ids out, no tokenizer or sampler involved.
 */
class Qwen35ReferenceTest {
    static final Map<String, LoadedModel> models = new HashMap<>();
    static final Map<String, JsonNode> references = new HashMap<>();

    @BeforeAll
    static void load() throws Exception {
        for (String m : new String[] {"dense", "moe"}) {
            models.put(m, LoadedModel.load(TestData.shared("models/qwen35-tiny-" + m), 2, LoadProgress.NONE));
            references.put(m, new ObjectMapper().readTree(TestData.shared("reference/qwen35-tiny-" + m + "_greedy.json").toFile()));
        }
    }

    @AfterAll
    static void close() {
        models.values().forEach(LoadedModel::close);
    }

    /** The ids of the k largest logits, largest first. */
    private static int[] topK(float[] v, int k) {
        Integer[] ids = new Integer[v.length];
        for (int i = 0; i < ids.length; i++) ids[i] = i;
        Arrays.sort(ids, (a, b) -> Float.compare(v[b], v[a]));
        int[] out = new int[k];
        for (int i = 0; i < k; i++) out[i] = ids[i];
        return out;
    }

    /** Prefills the prompt in chunks of {@code batch} on a fresh sequence, then decodes greedily {@code n} tokens. */
    private static int[] greedy(LoadedModel model, int[] prompt, int batch, int n, float[][] firstLogits) {
        try (SequenceKv sequence = model.pool().newSequence()) {
            KvStore kv = model.newKvStore(sequence);
            float[] logits = model.prefill(prompt, kv, batch);
            int[] out = new int[n];
            for (int i = 0; i < n; i++) {
                if (firstLogits != null && i < firstLogits.length) firstLogits[i] = logits;
                out[i] = argmax(logits);
                logits = model.step(out[i], kv);
            }
            return out;
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void greedyIdsLogitsAndTopFiveMatchTheFloat64Reference(String m) {
        LoadedModel model = models.get(m);
        JsonNode ref = references.get(m);
        int[] prompt = ints(ref.get("prompt_ids"));
        int[] expected = ints(ref.get("generated_ids"));
        float[][] first = new float[8][];
        int[] got = greedy(model, prompt, 512, expected.length, first);
        JsonNode last = ref.get("last_prompt_position_logits");
        double worst = 0;
        for (int i = 0; i < last.size(); i++) worst = Math.max(worst, Math.abs(last.get(i).asDouble() - first[0][i]));
        assertTrue(worst <= 5e-4, m + ": last prompt position logits differ by up to " + worst);
        assertArrayEquals(expected, got, m + ": greedy ids");
        JsonNode top5 = ref.get("top5_first_steps");
        for (int s = 0; s < 8; s++) {
            assertArrayEquals(ints(top5.get(s).get("ids")), topK(first[s], 5), m + ": top-5 at step " + s);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void prefillInChunksOf1_7_64_512GivesTheSameGreedyIds(String m) {
        LoadedModel model = models.get(m);
        JsonNode ref = references.get(m);
        // prompt + reply: 72 tokens, so chunks of 64 leave a ragged tail and one chunk holds them all
        int[] prompt = java.util.stream.IntStream.concat(Arrays.stream(ints(ref.get("prompt_ids"))),
                Arrays.stream(ints(ref.get("generated_ids")))).toArray();
        int[] oneShot = greedy(model, prompt, 512, 8, null);
        for (int batch : new int[] {1, 7, 64}) {
            assertArrayEquals(oneShot, greedy(model, prompt, batch, 8, null), m + ": prefill in chunks of " + batch);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void tokenByTokenAndChunkedPrefillAgree(String m) {
        LoadedModel model = models.get(m);
        int[] prompt = ints(references.get(m).get("prompt_ids"));
        float[] whole, single;
        try (SequenceKv a = model.pool().newSequence(); SequenceKv b = model.pool().newSequence()) {
            whole = model.prefill(prompt, model.newKvStore(a), 512);
            single = model.prefill(prompt, model.newKvStore(b), 1);
        }
        double worst = 0;
        for (int i = 0; i < whole.length; i++) worst = Math.max(worst, Math.abs(whole[i] - single[i]));
        assertTrue(worst <= 1e-4, m + ": one-chunk and token-by-token prefill logits differ by " + worst);
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void batchedEqualsSequential(String m) {
        LoadedModel model = models.get(m);
        // passes of up to 16 rows (every decode pass, short prefills) are batch-invariant on the CPU backend
        int[] prompt = Arrays.copyOfRange(ints(references.get(m).get("prompt_ids")), 0, 9);
        int[] other = Arrays.copyOfRange(ints(references.get(m).get("generated_ids")), 0, 6);
        try (SequenceKv a = model.pool().newSequence(); SequenceKv b = model.pool().newSequence();
             SequenceKv c = model.pool().newSequence(); SequenceKv d = model.pool().newSequence()) {
            KvStore ka = model.newKvStore(a), kb = model.newKvStore(b), kc = model.newKvStore(c), kd = model.newKvStore(d);
            float[] aloneA = model.evaluate(new int[][] {prompt}, new KvStore[] {ka}, true)[0];
            float[] aloneB = model.evaluate(new int[][] {other}, new KvStore[] {kb}, true)[0];
            float[][] together = model.evaluate(new int[][] {prompt, other}, new KvStore[] {kc, kd}, true);
            assertArrayEquals(aloneA, together[0], m + ": first sequence batched");
            assertArrayEquals(aloneB, together[1], m + ": second sequence batched");
            // decode steps of both, batched vs alone, continuing the carried state
            float[] stepA = model.evaluate(new int[][] {{argmax(aloneA)}}, new KvStore[] {ka}, true)[0];
            float[] stepB = model.evaluate(new int[][] {{argmax(aloneB)}}, new KvStore[] {kb}, true)[0];
            float[][] steps = model.evaluate(new int[][] {{argmax(aloneA)}, {argmax(aloneB)}}, new KvStore[] {kc, kd}, true);
            assertArrayEquals(stepA, steps[0], m + ": first sequence's decode step batched");
            assertArrayEquals(stepB, steps[1], m + ": second sequence's decode step batched");
            assertEquals(prompt.length + 1, kc.length());
        }
    }
}
