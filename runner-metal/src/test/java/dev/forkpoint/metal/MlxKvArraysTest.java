package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
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
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The MLX backend's keys and values as MLX arrays ({@link MlxKvArrays}) on stories260K, against the CPU backend's KV
 * pages and logits for the same tokens (an independent computation): what the arrays hold after prefill, across the
 * growth past one chunk of {@value MlxKvArrays#CHUNK} positions, after a failed step rolled back (the next steps as
 * if it never ran), and for a sequence that shares a prefix the way the prefix cache shares it (a fork, a truncated
 * fork: copy-on-write of a partial page, arrays rebuilt from the pages) against a fresh prefill.
 */
@Tag("mlx")
class MlxKvArraysTest {

    /** A model on one backend with a page pool of {@code type}. */
    private record Run(ModelFiles files, Backend backend, Architecture arch, PagePool pool) implements AutoCloseable {
        static Run open(Path model, Backend backend, KvElementType type) throws IOException {
            ModelFiles files = ModelFiles.open(model);
            Architecture arch = files.load(backend, n -> {});
            ModelConfig c = arch.config();
            KvLayout layout = KvLayout.of(c.kvLayers(), c.kvDim(), type);
            return new Run(files, backend, arch, new PagePool(layout, layout.budgetFor(512, 4)));
        }

        /** One step, as the engine takes it (through runStep); rolled back and rethrown when anything fails. */
        float[] step(Ops ops, KvStore kv, int[] chunk) {
            return backend.runStep(() -> ModelSteps.step(arch, ops, kv, chunk));
        }

        float[] step(KvStore kv, int[] chunk) {
            return step(backend.ops(), kv, chunk);
        }

        @Override
        public void close() {
            pool.close();
            files.close();
            backend.close();
        }
    }

    private static Path stories() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path file = p.resolveSibling("shared").resolve("models/stories260K.gguf");
            if (Files.exists(file)) return file;
        }
        Assumptions.abort("../shared/models/stories260K.gguf is not beside the project; skipping");
        return null;
    }

    private static int[] tokens(int n, long seed) {
        Random r = new Random(seed);
        int[] ids = new int[n];
        ids[0] = 1;   // BOS
        for (int i = 1; i < n; i++) ids[i] = 3 + r.nextInt(509);
        return ids;
    }

    private static double relativeL2(float[] got, float[] want) {
        double num = 0, den = 0;
        for (int i = 0; i < want.length; i++) {
            double d = got[i] - want[i];
            num += d * d;
            den += (double) want[i] * want[i];
        }
        return Math.sqrt(num / den);
    }

    /** Positions [0, n) of (layer, kind) in a sequence's pages, one after another. */
    private static float[] pages(SequenceKv sequence, int layer, KvKind kind, int n) {
        int kvDim = sequence.layout().kvDim();
        float[] out = new float[n * kvDim];
        for (int p = 0; p < n; p++) sequence.read(p, layer, kind, out, p * kvDim);
        return out;
    }

    /** Positions [0, n) of (layer, kind) in the store's MLX arrays (null when it keeps none). */
    private static float[] arrays(MlxBackend backend, KvStore kv, int layer, KvKind kind, int n) {
        MlxKvArrays a = ((MlxKvStore) kv).arrays();
        return backend.call(() -> a.read(backend.session(), layer, kind, n));
    }

    /** The MLX arrays of every layer equal the MLX store's pages exactly and the CPU backend's within 1e-4 (relative L2). */
    private static void sameKv(MlxBackend backend, KvStore kv, SequenceKv sequence, SequenceKv cpu, int n, String when) {
        for (int layer = 0; layer < sequence.layout().layers(); layer++) {
            for (KvKind kind : KvKind.values()) {
                float[] got = arrays(backend, kv, layer, kind, n);
                assertArrayEquals(pages(sequence, layer, kind, n), got, when + ": layer " + layer + " " + kind + ", MLX arrays against its pages");
                double err = relativeL2(got, pages(cpu, layer, kind, n));
                assertTrue(err < 1e-4, when + ": layer " + layer + " " + kind + ", MLX arrays against the CPU's pages: " + err);
            }
        }
    }

    /** Ops that make matmul call number {@code failAt} (1-based) multiply by {@code bad} (an MLX shape error). */
    private static Ops failingAt(Ops delegate, int failAt, Weight bad) {
        AtomicInteger matmuls = new AtomicInteger();
        return (Ops) Proxy.newProxyInstance(Ops.class.getClassLoader(), new Class<?>[] {Ops.class}, (proxy, method, args) -> {
            if (method.getName().equals("matmul") && matmuls.incrementAndGet() == failAt) args[1] = bad;
            try {
                return method.invoke(delegate, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }

    @Test
    void theArraysHoldTheCpusKeysAndValuesAcrossAChunkAndAFailedStepChangesNothing() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        MlxBackend backend = new MlxBackend(mlx);
        int[] all = tokens(262, 7);
        try (Run gpu = Run.open(stories(), backend, KvElementType.F32); Run cpu = Run.open(stories(), new CpuBackend(1), KvElementType.F32)) {
            Weight bad = backend.weight(new HostMatrix("bad", new float[3 * 5], 3, 5));
            SequenceKv gs = gpu.pool().newSequence(), cs = cpu.pool().newSequence();
            KvStore gkv = backend.newKvStore(gs), ckv = cpu.backend().newKvStore(cs);
            int prompt = 250;
            float[] g = gpu.step(gkv, Arrays.copyOf(all, prompt)), c = cpu.step(ckv, Arrays.copyOf(all, prompt));
            assertTrue(relativeL2(g, c) < 1e-3, "prefill logits against the CPU's: " + relativeL2(g, c));
            sameKv(backend, gkv, gs, cs, prompt, "after prefill");
            assertEquals(MlxKvArrays.CHUNK, ((MlxKvStore) gkv).arrays().capacity(0));
            float[][] before = new float[2 * gs.layout().layers()][];
            for (int layer = 0; layer < gs.layout().layers(); layer++) {
                before[2 * layer] = arrays(backend, gkv, layer, KvKind.KEY, prompt);
                before[2 * layer + 1] = arrays(backend, gkv, layer, KvKind.VALUE, prompt);
            }
            // a step of 8 positions (past the first chunk) that fails in the last layer, after the others wrote theirs
            int matmulsPerLayer = 7, last = gs.layout().layers() - 1;
            int[] chunk = Arrays.copyOfRange(all, prompt, prompt + 8);
            Ops failing = failingAt(backend.ops(), last * matmulsPerLayer + 5, bad);
            MlxException e = assertThrows(MlxException.class, () -> gpu.step(failing, gkv, chunk));
            assertEquals("mlx_matmul", e.function());
            assertEquals(prompt, gkv.length(), "the failed step rolled back");
            assertNull(arrays(backend, gkv, 0, KvKind.KEY, 0), "the failed step's arrays are gone");
            // the same step again: the arrays are rebuilt from the pages, and hold what they held plus the step
            g = gpu.step(gkv, chunk);
            c = cpu.step(ckv, chunk);
            assertTrue(relativeL2(g, c) < 1e-3, "logits of the step after the failure against the CPU's: " + relativeL2(g, c));
            for (int layer = 0; layer < gs.layout().layers(); layer++) {
                float[] k = arrays(backend, gkv, layer, KvKind.KEY, prompt + 8), v = arrays(backend, gkv, layer, KvKind.VALUE, prompt + 8);
                assertArrayEquals(before[2 * layer], Arrays.copyOf(k, before[2 * layer].length), "layer " + layer + " keys before the step");
                assertArrayEquals(before[2 * layer + 1], Arrays.copyOf(v, before[2 * layer + 1].length), "layer " + layer + " values before the step");
            }
            assertEquals(2 * MlxKvArrays.CHUNK, ((MlxKvStore) gkv).arrays().capacity(0), "grown by one chunk");
            // decode steps: each step's logits and ids as the CPU's
            for (int p = prompt + 8; p < all.length; p++) {
                g = gpu.step(gkv, new int[] {all[p]});
                c = cpu.step(ckv, new int[] {all[p]});
                assertTrue(relativeL2(g, c) < 1e-3, "decode at " + p + ": " + relativeL2(g, c));
            }
            sameKv(backend, gkv, gs, cs, all.length, "after decoding past the chunk");
        }
    }

    @Test
    void aSequenceSharingACachedPrefixGetsTheLogitsOfAFreshPrefill() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        int[] all = tokens(40, 11);
        for (KvElementType type : new KvElementType[] {KvElementType.F32, KvElementType.F16}) {   // MLX refuses quantised KV
            MlxBackend backend = new MlxBackend(mlx);
            try (Run gpu = Run.open(stories(), backend, type); Run cpu = Run.open(stories(), new CpuBackend(1), type)) {
                int shared = 21, rest = all.length - shared;   // 21: a partial second page (16 positions each), copied on write
                int[] head = Arrays.copyOf(all, shared), tail = Arrays.copyOfRange(all, shared, all.length);
                // fresh: the same chunks on a sequence of its own
                KvStore fresh = backend.newKvStore(gpu.pool().newSequence());
                gpu.step(fresh, head);
                float[] want = gpu.step(fresh, tail);
                float[] cpuWant;
                try (SequenceKv cs = cpu.pool().newSequence()) {
                    KvStore ckv = cpu.backend().newKvStore(cs);
                    cpu.step(ckv, head);
                    cpuWant = cpu.step(ckv, tail);
                }
                assertTrue(relativeL2(want, cpuWant) < 1e-3, type + ": fresh prefill against the CPU's: " + relativeL2(want, cpuWant));
                // a fork after the shared prefix, as a cache hit at its end: its arrays come from the shared pages
                SequenceKv original = gpu.pool().newSequence();
                KvStore okv = backend.newKvStore(original);
                gpu.step(okv, head);
                try (SequenceKv fork = original.fork()) {
                    float[] got = gpu.step(backend.newKvStore(fork), tail);
                    assertTrue(relativeL2(got, want) < 1e-6, type + ": fork at " + shared + ": " + relativeL2(got, want));
                }
                // the original goes on past the prefix with other tokens; a fork of it cut back to the prefix, as a hit
                // inside an edge, sees the prefix's entries (the original's later ones are not its)
                gpu.step(okv, tokens(rest, 99));
                try (SequenceKv cut = original.fork()) {
                    cut.truncate(shared);
                    KvStore ckv = backend.newKvStore(cut);
                    float[] got = gpu.step(ckv, tail);
                    assertTrue(relativeL2(got, want) < 1e-6, type + ": truncated fork: " + relativeL2(got, want));
                    // and then a decode step on it agrees with one on the fresh sequence
                    int next = 5;
                    float[] a = gpu.step(ckv, new int[] {next}), b = gpu.step(fresh, new int[] {next});
                    assertTrue(relativeL2(a, b) < 1e-6, type + ": decode after the truncated fork: " + relativeL2(a, b));
                }
                // the original's own arrays are unchanged by its forks' steps
                float[] origNext = gpu.step(okv, new int[] {7});
                try (SequenceKv check = gpu.pool().newSequence()) {
                    KvStore kv = backend.newKvStore(check);
                    gpu.step(kv, head);
                    gpu.step(kv, tokens(rest, 99));
                    float[] expect = gpu.step(kv, new int[] {7});
                    assertTrue(relativeL2(origNext, expect) < 1e-6, type + ": the original after its forks: " + relativeL2(origNext, expect));
                }
                original.close();
            }
        }
    }
}
