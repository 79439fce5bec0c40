package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.RecurrentSnapshot;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxException;
import dev.forkpoint.metal.mlxc.MlxTestLibrary;
import dev.forkpoint.model.Architecture;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.model.ModelFiles;
import dev.forkpoint.tensor.HostMatrix;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The hybrids (Gated DeltaNet + gated attention, dense and mixture of experts) on the MLX backend, on a real MLX-C
 * (skipped without one, see {@link MlxTestLibrary}): the tiny Qwen3.5 models of {@code ../shared/models} against the
 * independent float64 reference's greedy run ({@code ../shared/reference/qwen35-tiny-*_greedy.json}) and against the
 * CPU backend (whose delta rule takes its chunked form for prefills of 16 tokens or more, the MLX one the recurrent
 * form); chunked prefill; checkpoints; an MLX failure inside a hybrid step; no arrays left behind.
 */
@Tag("mlx")
class MlxHybridTest {

    /** Relative L2 distance from the CPU backend's logits that the MLX backend must stay within. */
    static final double VS_CPU = 1e-3;

    /** A hybrid model loaded on one backend, with a page pool for its attention layers' KV. */
    record Run(ModelFiles files, Backend backend, Architecture arch, PagePool pool) implements AutoCloseable {
        static Run open(Path model, Backend backend) throws IOException {
            ModelFiles files = ModelFiles.open(model);
            try {
                Architecture arch = files.load(backend, n -> {});
                ModelConfig c = arch.config();
                KvLayout layout = KvLayout.of(c.kvLayers(), c.kvDim(), KvElementType.F32);
                return new Run(files, backend, arch, new PagePool(layout, layout.budgetFor(512, 4)));
            } catch (RuntimeException e) {
                files.close();
                backend.close();
                throw e;
            }
        }

        RecurrentLayout recurrent() {
            return arch.config().linear() == null ? null : arch.config().linear().recurrentLayout();
        }

        KvStore store(SequenceKv sequence) {
            return backend.newKvStore(sequence, recurrent());
        }

        KvStore newSequence() {
            return store(pool.newSequence());
        }

        float[] step(Ops ops, KvStore kv, int[] chunk) {
            return ModelSteps.step(arch, ops, kv, chunk);
        }

        float[] prefill(KvStore kv, int[] prompt, int chunk) {
            return ModelSteps.prefill(arch, backend.ops(), kv, prompt, chunk);
        }

        /** Greedy ids from {@code logits} on; every step's logits into {@code seen} (when not null). */
        int[] greedy(KvStore kv, float[] logits, int steps, float[][] seen) {
            int[] out = new int[steps];
            for (int i = 0; i < steps; i++) {
                if (seen != null) seen[i] = logits;
                out[i] = argmax(logits);
                if (i + 1 < steps) logits = step(backend.ops(), kv, new int[] {out[i]});
            }
            return out;
        }

        @Override
        public void close() {
            pool.close();
            files.close();
            backend.close();
        }
    }

    static Path shared(String relative) {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolveSibling("shared");
            if (Files.isDirectory(candidate.resolve("models"))) {
                Path file = candidate.resolve(relative);
                Assumptions.assumeTrue(Files.exists(file), () -> file + " is missing; skipping");
                return file;
            }
        }
        Assumptions.abort("../shared (test models and reference data) is not beside the project; skipping");
        return null;
    }

    static JsonNode reference(String m) throws IOException {
        return new ObjectMapper().readTree(shared("reference/qwen35-tiny-" + m + "_greedy.json").toFile());
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

    static double relativeL2(float[] got, float[] want) {
        double num = 0, den = 0;
        for (int i = 0; i < want.length; i++) {
            double d = got[i] - want[i];
            num += d * d;
            den += (double) want[i] * want[i];
        }
        return Math.sqrt(num / den);
    }

    /** The prompt and the reference's reply after it: 72 ids. */
    static int[] promptAndReply(JsonNode ref) {
        return IntStream.concat(Arrays.stream(ints(ref.get("prompt_ids"))), Arrays.stream(ints(ref.get("generated_ids")))).toArray();
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void greedyIdsEqualTheFloat64ReferenceAndTheCpuBackendLogitsWithinBound(String m) throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        Path model = shared("models/qwen35-tiny-" + m);
        JsonNode ref = reference(m);
        int[] prompt = ints(ref.get("prompt_ids"));
        int[] expected = ints(ref.get("generated_ids"));
        try (Run gpu = Run.open(model, new MlxBackend(mlx)); Run cpu = Run.open(model, new CpuBackend(1))) {
            assertEquals(gpu.arch().config().architecture(), m.equals("dense") ? "qwen35" : "qwen35moe");
            KvStore gkv = gpu.newSequence(), ckv = cpu.newSequence();
            float[] g = gpu.prefill(gkv, prompt, prompt.length);
            float[] c = cpu.prefill(ckv, prompt, prompt.length);
            JsonNode last = ref.get("last_prompt_position_logits");
            double vsRef = 0;
            for (int i = 0; i < last.size(); i++) vsRef = Math.max(vsRef, Math.abs(last.get(i).asDouble() - g[i]));
            float[][] gSeen = new float[expected.length][], cSeen = new float[expected.length][];
            int[] gIds = gpu.greedy(gkv, g, expected.length, gSeen);
            int[] cIds = cpu.greedy(ckv, c, expected.length, cSeen);
            double worst = 0;
            for (int i = 0; i < expected.length; i++) worst = Math.max(worst, relativeL2(gSeen[i], cSeen[i]));
            System.out.printf(Locale.ROOT, "MlxHybridTest %s: prompt logits vs float64 reference max %.2e, vs CPU rel L2 %.2e;"
                    + " worst of %d steps vs CPU %.2e; %d of %d greedy ids equal the reference's%n", m, vsRef,
                    relativeL2(g, c), expected.length, worst, agreeing(expected, gIds), expected.length);
            assertTrue(vsRef <= 5e-4, m + ": last prompt position logits differ from the float64 reference by " + vsRef);
            assertTrue(worst < VS_CPU, m + ": logits vs the CPU backend's: relative L2 " + worst);
            assertArrayEquals(expected, gIds, m + ": greedy ids vs the float64 reference");
            assertArrayEquals(cIds, gIds, m + ": greedy ids vs the CPU backend");
        }
    }

    static int agreeing(int[] a, int[] b) {
        int k = 0;
        while (k < Math.min(a.length, b.length) && a[k] == b[k]) k++;
        return k;
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void prefillInChunksOf1_7_64EqualsOneChunkAndTheCpusChunkedForm(String m) throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        Path model = shared("models/qwen35-tiny-" + m);
        int[] prompt = promptAndReply(reference(m));   // 72 tokens: chunks of 64 leave a ragged tail
        try (Run gpu = Run.open(model, new MlxBackend(mlx)); Run cpu = Run.open(model, new CpuBackend(1))) {
            KvStore whole = gpu.newSequence();
            float[] one = gpu.prefill(whole, prompt, prompt.length);
            float[] cpuOne = cpu.prefill(cpu.newSequence(), prompt, prompt.length);   // the CPU's chunked delta rule
            double vsCpu = relativeL2(one, cpuOne);
            assertTrue(vsCpu < VS_CPU, m + ": 72-token prefill vs the CPU's chunked form: relative L2 " + vsCpu);
            int[] want = gpu.greedy(whole, one, 8, null);
            for (int chunk : new int[] {1, 7, 64}) {
                KvStore kv = gpu.newSequence();
                float[] logits = gpu.prefill(kv, prompt, chunk);
                assertEquals(prompt.length, kv.length());
                double err = relativeL2(logits, one);
                System.out.printf(Locale.ROOT, "MlxHybridTest %s: chunks of %d vs one chunk rel L2 %.2e (one chunk vs CPU %.2e)%n",
                        m, chunk, err, vsCpu);
                assertTrue(err < 1e-5, m + ": chunks of " + chunk + ": relative L2 " + err);
                assertArrayEquals(want, gpu.greedy(kv, logits, 8, null), m + ": greedy ids after prefill in chunks of " + chunk);
            }
        }
    }

    @Test
    void aCheckpointRestoredResumesToTheSameLogits() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        int[] tokens = promptAndReply(reference("dense"));
        int[] head = Arrays.copyOf(tokens, 24), tail = Arrays.copyOfRange(tokens, 24, 40);
        try (Run run = Run.open(shared("models/qwen35-tiny-dense"), new MlxBackend(mlx));
             Run cpu = Run.open(shared("models/qwen35-tiny-dense"), new CpuBackend(1))) {
            SequenceKv sequence = run.pool().newSequence();
            KvStore kv = run.store(sequence);
            run.prefill(kv, head, 8);
            RecurrentSnapshot checkpoint = kv.snapshot();
            assertEquals(run.recurrent(), checkpoint.layout());
            assertEquals(run.recurrent().bytesPerSequence(), checkpoint.byteSize());
            float[] straight = run.prefill(kv, tail, 5);
            // back to the checkpoint on the same store (KV truncated as the engine does), then on a fork in a new store
            sequence.truncate(head.length);
            kv.restore(checkpoint);
            float[] again = run.prefill(kv, tail, 5);
            assertArrayEquals(straight, again, "resumed on the same store");
            SequenceKv fork = sequence.fork();
            fork.truncate(head.length);
            KvStore forked = run.store(fork);
            forked.restore(checkpoint);
            assertArrayEquals(straight, run.prefill(forked, tail, 5), "resumed on a fork");
            // the checkpoint is a copy: the steps after it did not change it
            KvStore third = run.newSequence();
            run.prefill(third, head, 24);
            third.restore(checkpoint);
            assertEquals(24, third.length());
            assertTrue(relativeL2(run.prefill(third, tail, 16), straight) < 1e-5, "restored over a state of the same offset");
            // a snapshot of another backend is refused
            KvStore cpuKv = cpu.newSequence();
            cpu.prefill(cpuKv, head, 24);
            RecurrentSnapshot foreign = cpuKv.snapshot();
            assertThrows(IllegalArgumentException.class, () -> kv.restore(foreign));
            kv.begin(1);
            assertThrows(IllegalStateException.class, kv::snapshot, "no snapshot during a step");
            kv.rollback();
        }
    }

    /** Ops that pass every call to {@code delegate} but make matmul call number {@code failAt} (1-based) use {@code bad}. */
    static Ops failingAt(Ops delegate, AtomicInteger matmuls, int failAt, Weight bad) {
        return (Ops) Proxy.newProxyInstance(Ops.class.getClassLoader(), new Class<?>[] {Ops.class}, (proxy, method, args) -> {
            if (method.getName().equals("matmul") && matmuls.incrementAndGet() == failAt) args[1] = bad;
            try {
                return method.invoke(delegate, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }

    /** The committed state as host floats (the snapshot's arrays, one per linear layer, conv windows then matrices). */
    static float[][] state(KvStore kv) {
        MlxRecurrentState.Snapshot s = (MlxRecurrentState.Snapshot) kv.snapshot();
        float[][] out = new float[2 * s.conv().length][];
        for (int l = 0; l < s.conv().length; l++) {
            out[2 * l] = s.conv()[l];
            out[2 * l + 1] = s.state()[l];
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"dense", "moe"})
    void anMlxFailureInsideAHybridStepRollsBackAndTheNextStepIsCorrect(String m) throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        JsonNode ref = reference(m);
        int[] prompt = ints(ref.get("prompt_ids"));
        int[] expected = ints(ref.get("generated_ids"));
        try (Run run = Run.open(shared("models/qwen35-tiny-" + m), new MlxBackend(mlx))) {
            Weight bad = run.backend().weight(new HostMatrix("bad", new float[3 * 5], 3, 5));
            KvStore kv = run.newSequence();
            float[] logits = run.prefill(kv, prompt, prompt.length);
            float[][] before = state(kv);
            int length = kv.length();
            // matmuls through Ops per Gated DeltaNet layer: qkv, z, b, a, out, then the feed-forward's (dense: gate, up,
            // down; moe: the shared expert's gate, up, down and its sigmoid gate, the experts' own products being
            // inside the moe op). A failure in layer 1's z projection (after layer 0 wrote its state), and one in the
            // attention layer's k projection (after all three linear layers wrote theirs).
            int perLinear = m.equals("dense") ? 8 : 9;
            for (int failAt : new int[] {perLinear + 2, 3 * perLinear + 2}) {
                Ops failing = failingAt(run.backend().ops(), new AtomicInteger(), failAt, bad);
                MlxException e = assertThrows(MlxException.class, () -> run.step(failing, kv, new int[] {expected[0]}),
                        "matmul " + failAt);
                assertEquals("mlx_matmul", e.function());
                assertTrue(e.mlxMessage() != null && e.mlxMessage().contains("[matmul]"), e.getMessage());
                assertEquals(length, kv.length(), "the failed step rolled back");
                assertEquals(0, kv.pending());
                float[][] after = state(kv);
                for (int i = 0; i < before.length; i++) assertArrayEquals(before[i], after[i], "recurrent state array " + i + " unchanged");
            }
            // the next steps are the reference's
            assertArrayEquals(Arrays.copyOf(expected, 8), run.greedy(kv, logits, 8, null));
        }
    }

    @Test
    void stepsWithInjectedFailuresUnreadPassesAndCheckpointsLeaveNoArraysBehind() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        int[] all = promptAndReply(reference("moe"));
        MlxBackend backend = new MlxBackend(mlx);
        try (Run run = Run.open(shared("models/qwen35-tiny-moe"), backend)) {
            Weight bad = backend.weight(new HostMatrix("bad", new float[3 * 5], 3, 5));
            KvStore warm = run.newSequence();
            run.step(backend.ops(), warm, new int[] {all[0]});
            SequenceKv sequence = run.pool().newSequence();
            KvStore kv = run.store(sequence);
            run.step(backend.ops(), kv, new int[] {all[0]});   // its state now exists: 2 arrays per linear layer
            backend.releaseActivations();
            long baseline = mlx.activeMemory();
            int liveBaseline = backend.liveArrays();
            RecurrentSnapshot checkpoint = null;
            int checkpointAt = -1;
            for (int i = 0; i < 40; i++) {
                if (i % 5 == 2) {
                    Ops failing = failingAt(backend.ops(), new AtomicInteger(), 1 + i % 23, bad);
                    assertThrows(MlxException.class, () -> run.step(failing, kv, new int[] {all[kv.length()]}));
                } else if (i % 7 == 4) {   // a chunk whose logits are not read: its state is evaluated at commit
                    int[] chunk = {all[kv.length()], all[kv.length() + 1]};
                    Segment segment = new Segment(chunk, kv.length(), kv);
                    kv.begin(2);
                    run.arch().forward(backend.ops(), List.of(segment));
                    kv.commit();
                } else if (i % 11 == 10) {   // back to a checkpoint
                    sequence.truncate(checkpointAt);
                    kv.restore(checkpoint);
                } else {
                    run.step(backend.ops(), kv, new int[] {all[kv.length()]});
                    if (i % 9 == 3) {
                        checkpoint = kv.snapshot();
                        checkpointAt = kv.length();
                    }
                }
            }
            // a second sequence that is closed: its state is freed with it
            SequenceKv other = run.pool().newSequence();
            run.prefill(run.store(other), Arrays.copyOf(all, 9), 9);
            other.close();
            run.step(backend.ops(), kv, new int[] {all[kv.length()]});
            backend.releaseActivations();
            assertEquals(liveBaseline, backend.liveArrays(), "live MLX arrays after 40 steps");
            assertEquals(baseline, mlx.activeMemory(), "mlx_get_active_memory after 40 steps");
            sequence.close();
            assertEquals(liveBaseline - 2 * run.recurrent().layers() - 2 * run.arch().config().kvLayers(), backend.liveArrays(),
                    "a closed sequence's state and its keys and values are freed");
        }
    }
}
