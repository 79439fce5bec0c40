package dev.forkpoint.backend.cpu;

import dev.forkpoint.TestData;
import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.model.Architecture;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.model.ModelFiles;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.convert.ModelQuantizer;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ops' activation arrays are reused from step to step, zeroed, confined to the step's thread, and bounded. */
class StepBuffersTest {
    @Test
    void aStepGetsTheLastStepsArraysBackZeroed() {
        var b = new StepBuffers(1 << 20);
        assertTrue(b.open());
        float[] x = b.floats(100), y = b.floats(100), z = b.floats(7);
        x[3] = 1;
        z[6] = 2;
        b.close();
        assertEquals(4L * 207, b.keptBytes());
        assertTrue(b.open());
        float[] x2 = b.floats(100), z2 = b.floats(7), w = b.floats(100), extra = b.floats(100);
        Map<float[], Boolean> old = new IdentityHashMap<>(Map.of(x, true, y, true));
        assertTrue(old.containsKey(x2) && old.containsKey(w) && x2 != w, "both 100-float arrays come back");
        assertSame(z, z2);
        assertFalse(old.containsKey(extra), "a third 100-float array is new");
        for (float[] a : List.of(x2, z2, w)) for (float v : a) assertEquals(0f, v, "handed out as zeros");
        assertEquals(4, b.allocated(), "three in the first step, one more in the second");
        b.close();
    }

    @Test
    void whatAStepDidNotUseIsDroppedAndTheLimitBoundsWhatIsKept() {
        var b = new StepBuffers(4000);
        b.open();
        b.floats(500);
        b.floats(400);
        float[] over = b.floats(200);   // 900 + 200 floats > 1000: allocated outside the step's share
        b.close();
        assertEquals(4L * 900, b.keptBytes(), "the array beyond the limit is not kept");
        b.open();
        float[] again = b.floats(200);
        assertNotSame(over, again);
        b.close();
        assertEquals(4L * 200, b.keptBytes(), "the 500 and 400 arrays, unused by the last step, are dropped");
    }

    @Test
    void shortsAndBytesAreReusedLikeFloatsAndCodeWithoutTheBuffersGetsItsOwn() {
        var b = new StepBuffers(1 << 20);
        assertEquals(null, StepBuffers.onThisThread());
        short[] outside = StepBuffers.shortsHere(32);
        b.open();
        assertSame(b, StepBuffers.onThisThread());
        short[] s = StepBuffers.shortsHere(32);
        byte[] c = StepBuffers.bytesHere(32);
        assertNotSame(outside, s);
        s[0] = 5;
        c[1] = 6;
        b.close();
        assertEquals(null, StepBuffers.onThisThread(), "closed: nothing open on this thread");
        b.open();
        short[] s2 = StepBuffers.shortsHere(32);
        byte[] c2 = StepBuffers.bytesHere(32);
        assertSame(s, s2);
        assertSame(c, c2);
        assertEquals(0, s2[0]);
        assertEquals(0, c2[1]);
        b.close();
        assertEquals(2L * 32 + 32, b.keptBytes());
    }

    @Test
    void onlyTheStepsOwnThreadGetsReusedArrays() throws Exception {
        var b = new StepBuffers(1 << 20);
        assertTrue(b.open());
        assertFalse(b.open(), "one step at a time");
        float[] mine = b.floats(64);
        b.close();
        b.open();
        float[] other = CompletableFuture.supplyAsync(() -> b.floats(64)).get();
        assertNotSame(mine, other, "another thread's op gets its own array");
        assertSame(mine, b.floats(64));
        var closeElsewhere = assertThrows(java.util.concurrent.ExecutionException.class, () -> CompletableFuture.runAsync(b::close).get());
        assertTrue(closeElsewhere.getCause() instanceof IllegalStateException, "only the owner closes: " + closeElsewhere.getCause());
        b.close();
        float[] outside = b.floats(64);
        assertNotSame(mine, outside, "no step open: a new array");
    }

    @TempDir
    Path tmp;

    /**
     * stories260K (as stored, F32, and quantised to Q8_0 and Q4_0, on the kernels {@code --kernels auto} picks) decoding
     * 24 greedy tokens: every step through {@code runStep} (arrays reused) gives the same logits, bit for bit, as the
     * same steps with fresh arrays, and after the first decode step no step makes a new array — activations and
     * quantised activations alike.
     */
    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"F32", "Q8_0", "Q4_0"})
    void aDecodeLoopMakesNoNewArraysAndComputesTheSame(GgmlType type) throws Exception {
        var model = TestData.shared("models/stories260K.gguf");
        if (type != GgmlType.F32) model = ModelQuantizer.quantize(model, tmp.resolve(type + ".gguf"), type).output();
        try (CpuBackend reused = new CpuBackend(2, KernelChoice.AUTO); CpuBackend fresh = new CpuBackend(2, KernelChoice.AUTO);
             ModelFiles filesA = ModelFiles.open(model); ModelFiles filesB = ModelFiles.open(model)) {
            Architecture a = filesA.load(reused, n -> {}), b = filesB.load(fresh, n -> {});
            ModelConfig c = a.config();
            KvLayout layout = KvLayout.of(c.kvLayers(), c.kvDim(), KvElementType.F32);
            try (PagePool poolA = new PagePool(layout, layout.budgetFor(64, 2)); PagePool poolB = new PagePool(layout, layout.budgetFor(64, 2));
                 SequenceKv seqA = poolA.newSequence(); SequenceKv seqB = poolB.newSequence()) {
                KvStore kvA = reused.newKvStore(seqA), kvB = fresh.newKvStore(seqB);
                int[] prompt = {1, 403, 407, 261, 378, 260};
                float[] la = reused.runStep(() -> step(reused.ops(), a, kvA, prompt));
                float[] lb = step(fresh.ops(), b, kvB, prompt);   // no step open: every array new
                assertArrayEquals(lb, la);
                List<Long> madePerStep = new ArrayList<>();
                for (int i = 0; i < 24; i++) {
                    int[] next = {argmax(la)};
                    long before = reused.stepBuffers().allocated();
                    la = reused.runStep(() -> step(reused.ops(), a, kvA, next));
                    lb = step(fresh.ops(), b, kvB, next);
                    madePerStep.add(reused.stepBuffers().allocated() - before);
                    assertArrayEquals(lb, la, "step " + i);
                }
                assertTrue(madePerStep.get(0) > 0, "the first decode step has shapes the prefill did not");
                assertEquals(List.of(0L), madePerStep.subList(1, madePerStep.size()).stream().distinct().toList(),
                        "new arrays per decode step after the first: " + madePerStep);
                long kept = reused.stepBuffers().keptBytes();
                assertTrue(kept > 4L * c.dim() * c.layers() && kept <= StepBuffers.DEFAULT_LIMIT_BYTES, "kept " + kept);
            }
        }
    }

    private static float[] step(Ops ops, Architecture arch, KvStore kv, int[] tokens) {
        Segment segment = new Segment(tokens, kv.length(), kv);
        kv.begin(tokens.length);
        Activation hidden = arch.forward(ops, List.of(segment));
        float[] logits = ops.logits(ops.rows(hidden, new int[] {tokens.length - 1}), arch.output())[0];
        kv.prepareCommit();
        kv.commit();
        return logits;
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }
}
