package dev.forkpoint.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.backend.KvStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The engine's prefill and decode steps on stories260K against llama2.c's greedy reference (ids only, no tokenizer
 * or sampler involved), and chunked prefill against one-shot prefill.
 */
class PrefillDecodeTest {
    static LoadedModel model;
    static JsonNode reference;

    @BeforeAll
    static void load() throws Exception {
        Path gguf = TestData.shared("models/stories260K.gguf");
        reference = new ObjectMapper().readTree(TestData.shared("reference/stories260K_greedy_once_upon_a_time.json").toFile());
        model = LoadedModel.load(gguf, 2, LoadProgress.NONE);
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
        return out;
    }

    static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    @Test
    void greedyIdsMatchLlama2c() {
        int[] prompt = ints(reference.get("prompt_tokens"));
        int[] expected = ints(reference.get("generated_tokens"));
        KvStore kv = model.newKvStore(512);
        float[] logits = model.prefill(prompt, kv, 512);
        JsonNode top5 = reference.get("logits_after_prompt_top5");
        for (JsonNode pair : top5) {
            assertEquals(pair.get(1).asDouble(), logits[pair.get(0).asInt()], 1e-3, "logit of token " + pair.get(0));
        }
        int[] got = new int[expected.length];
        for (int i = 0; i < got.length; i++) {
            got[i] = argmax(logits);
            logits = model.step(got[i], kv);
        }
        assertArrayEquals(expected, got);
    }

    @Test
    void chunkedPrefillEqualsOneShot() {
        int[] tokens = ints(reference.get("all_tokens"));
        float[] oneShot = model.prefill(tokens, model.newKvStore(512), 512);
        for (int batch : new int[] {1, 7, 16}) {
            float[] chunked = model.prefill(tokens, model.newKvStore(512), batch);
            for (int i = 0; i < oneShot.length; i++) {
                assertEquals(oneShot[i], chunked[i], 1e-4f * Math.max(1, Math.abs(oneShot[i])), "num_batch " + batch + " logit " + i);
            }
        }
    }
}
