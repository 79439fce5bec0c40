package dev.forkpoint.metal;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.model.Architecture;

import java.util.Arrays;
import java.util.List;

/** A model driven step by step through the public SPI, as {@code LoadedModel.evaluate} does: the tests' one copy. */
final class ModelSteps {
    private ModelSteps() {}

    /** One step of {@code chunk} on {@code kv}: the logits of its last token; rolled back, and rethrown, when anything fails. */
    static float[] step(Architecture arch, Ops ops, KvStore kv, int[] chunk) {
        Segment segment = new Segment(chunk, kv.length(), kv);
        kv.begin(chunk.length);
        try {
            Activation hidden = arch.forward(ops, List.of(segment));
            float[] logits = ops.logits(ops.rows(hidden, new int[] {chunk.length - 1}), arch.output())[0];
            kv.prepareCommit();
            kv.commit();
            return logits;
        } catch (RuntimeException | Error e) {
            kv.rollback();
            throw e;
        }
    }

    /** The prompt in steps of {@code chunk} tokens; the last step's logits. */
    static float[] prefill(Architecture arch, Ops ops, KvStore kv, int[] prompt, int chunk) {
        float[] logits = null;
        for (int i = 0; i < prompt.length; i += chunk) {
            logits = step(arch, ops, kv, Arrays.copyOfRange(prompt, i, Math.min(prompt.length, i + chunk)));
        }
        return logits;
    }
}
