package dev.forkpoint.engine;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.kvcache.SequenceKv;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What the engine's reference tests read and compare: reference ids, argmax, logits of a fresh prefill, differences. */
final class Vectors {
    private Vectors() {}

    /** A JSON array of ints. */
    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
        return out;
    }

    /** The index of the largest value (the first of equals). */
    static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    /** The largest absolute difference of two arrays of one length. */
    static double maxDiff(float[] a, float[] b) {
        assertEquals(a.length, b.length);
        double m = 0;
        for (int i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
        return m;
    }

    /** The last token's logits after prefilling {@code prompt} on a fresh sequence, in one chunk. */
    static float[] lastLogits(LoadedModel model, int[] prompt) {
        try (SequenceKv sequence = model.pool().newSequence()) {
            return model.prefill(prompt, model.newKvStore(sequence), 512);
        }
    }

    /** Prefills {@code prompt} on a fresh sequence in one chunk, then decodes {@code n} ids greedily. */
    static int[] greedy(LoadedModel model, int[] prompt, int n) {
        try (SequenceKv sequence = model.pool().newSequence()) {
            dev.forkpoint.backend.KvStore kv = model.newKvStore(sequence);
            float[] logits = model.prefill(prompt, kv, 512);
            int[] out = new int[n];
            for (int i = 0; i < n; i++) {
                out[i] = argmax(logits);
                logits = model.step(out[i], kv);
            }
            return out;
        }
    }
}
