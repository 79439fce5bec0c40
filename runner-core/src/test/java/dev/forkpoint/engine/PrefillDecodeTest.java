package dev.forkpoint.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.kvcache.SequenceKv;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static dev.forkpoint.engine.Vectors.*;
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

    @Test
    void greedyIdsMatchLlama2c() {
        int[] prompt = ints(reference.get("prompt_tokens"));
        int[] expected = ints(reference.get("generated_tokens"));
        try (SequenceKv sequence = model.pool().newSequence()) {
        KvStore kv = model.newKvStore(sequence);
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
    }

    static float[] prefillFresh(int[] tokens, int batch) {
        try (SequenceKv sequence = model.pool().newSequence()) {
            return model.prefill(tokens, model.newKvStore(sequence), batch);
        }
    }

    @Test
    void chunkedPrefillEqualsOneShot() {
        int[] tokens = ints(reference.get("all_tokens"));
        float[] oneShot = prefillFresh(tokens, 512);
        for (int batch : new int[] {1, 7, 16}) {
            float[] chunked = prefillFresh(tokens, batch);
            for (int i = 0; i < oneShot.length; i++) {
                assertEquals(oneShot[i], chunked[i], 1e-4f * Math.max(1, Math.abs(oneShot[i])), "num_batch " + batch + " logit " + i);
            }
        }
    }
}
