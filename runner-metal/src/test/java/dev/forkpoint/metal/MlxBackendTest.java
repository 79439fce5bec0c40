package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
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
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.HostMatrix;
import dev.forkpoint.tensor.Quantization;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * The MLX backend on a real MLX-C (run when one is found, see {@link MlxTestLibrary}, skipped otherwise): stories260K
 * against the CPU backend and llama2.c's reference, chunked prefill, an MLX error inside a step, no leaked arrays,
 * the architectures it runs (the hybrids: MlxHybridTest), and the Q8_0 / Q4_0 / affine weights against their exact dequantisation.
 */
@Tag("mlx")
class MlxBackendTest {

    private static final float EPS = 1e-5f;

    // ---- the model, driven through the public pieces as LoadedModel.evaluate does ----

    /** A loaded model on one backend with a page pool for its KV. */
    private record Run(ModelFiles files, Backend backend, Architecture arch, PagePool pool) implements AutoCloseable {
        static Run open(Path model, Backend backend) throws IOException {
            ModelFiles files = ModelFiles.open(model);
            Architecture arch = files.load(backend, n -> {});
            ModelConfig c = arch.config();
            KvLayout layout = KvLayout.of(c.kvLayers(), c.kvDim(), KvElementType.F32);
            return new Run(files, backend, arch, new PagePool(layout, layout.budgetFor(512, 2)));
        }

        KvStore newSequence() {
            return backend.newKvStore(pool.newSequence());
        }

        /** One step: the logits of the chunk's last token (rolled back, and rethrown, when anything fails). */
        float[] step(Ops ops, KvStore kv, int[] chunk) {
            return ModelSteps.step(arch, ops, kv, chunk);
        }

        float[] prefill(KvStore kv, int[] prompt, int chunk) {
            return ModelSteps.prefill(arch, backend.ops(), kv, prompt, chunk);
        }

        /** Greedy ids after the prompt: {@code steps} of them, starting from the prompt's logits. */
        int[] greedy(KvStore kv, float[] logits, int steps) {
            int[] out = new int[steps];
            for (int i = 0; i < steps; i++) {
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

    private static Path shared(String relative) {
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

    private static JsonNode reference() throws IOException {
        return new ObjectMapper().readTree(shared("reference/stories260K_greedy_once_upon_a_time.json").toFile());
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
        return out;
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
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

    @Test
    void stories260kGreedyEqualsTheCpuBackendAndTheReference() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        Path model = shared("models/stories260K.gguf");
        JsonNode ref = reference();
        int[] prompt = ints(ref.get("prompt_tokens"));
        int[] expected = ints(ref.get("generated_tokens"));
        try (Run gpu = Run.open(model, new MlxBackend(mlx)); Run cpu = Run.open(model, new CpuBackend(1))) {
            assertEquals("mlx", gpu.backend().name());
            KvStore gkv = gpu.newSequence(), ckv = cpu.newSequence();
            float[] g = gpu.prefill(gkv, prompt, prompt.length);
            float[] c = cpu.prefill(ckv, prompt, prompt.length);
            double err = relativeL2(g, c);
            assertTrue(err < 1e-3, "last-prompt logits: relative L2 " + err + " against the CPU backend's");
            assertEquals(prompt.length, gkv.length());
            int[] gIds = gpu.greedy(gkv, g, expected.length);
            int[] cIds = cpu.greedy(ckv, c, expected.length);
            assertArrayEquals(cIds, gIds, "greedy ids: MLX vs CPU");
            assertArrayEquals(expected, gIds, "greedy ids: MLX vs llama2.c's reference");
        }
    }

    /**
     * A 1B-shape Q4_0 file (Llama-3.2-1B's shape, seeded weights: {@code ./forkpoint bench generate --shape llama-3.2-1b
     * --type q4_0 --out F}, then {@code FORKPOINT_1B_Q4_0=F}; 0.7 GB, so not part of the default run, skipped with a line
     * without it; any Q8_0 / Q4_0 GGUF works): the last-prompt logits on MLX against the CPU backend's, with the Java
     * kernels and with the native ones. Issue 14 asks for 1e-3 relative L2; measured 4.4e-2 on the 1B shape (and 4.7e-3 /
     * 5.3e-3 on stories260K quantised to Q8_0 / Q4_0): the weights are the same on both sides (the affine conversion is
     * exact, {@link #q8AndQ4BlocksAreConvertedToAffineExactly}), but the CPU quantises the activations to Q8_0 before
     * every product, as llama.cpp does, and MLX multiplies float activations — on F32 weights, where the CPU does not
     * quantise them, the two agree to 2e-7 ({@link #stories260kGreedyEqualsTheCpuBackendAndTheReference}). So the bound
     * here is 0.1, which a wrong conversion (relative L2 ≈ 1) or a wrong layout cannot meet; the 1e-3 goal is not met.
     */
    @Test
    void aOneBillionShapeQ4_0FileMatchesTheCpuBackend() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        String file = System.getenv("FORKPOINT_1B_Q4_0");
        if (file == null) System.err.println("MlxBackendTest: the 1B-shape Q4_0 comparison skipped: FORKPOINT_1B_Q4_0 is not set");
        Assumptions.assumeTrue(file != null, "FORKPOINT_1B_Q4_0 names no file");
        int[] prompt = {128000, 791, 6460, 374, 264, 1296, 315, 279, 4370, 33, 1887, 13};
        float[] onMlx;
        try (Run run = Run.open(Path.of(file), new MlxBackend(mlx))) {
            int vocab = run.arch().config().vocabSize();
            for (int i = 0; i < prompt.length; i++) prompt[i] %= vocab;
            onMlx = run.prefill(run.newSequence(), prompt, prompt.length);
        }
        for (dev.forkpoint.backend.KernelChoice k : new dev.forkpoint.backend.KernelChoice[] {
                dev.forkpoint.backend.KernelChoice.JAVA, dev.forkpoint.backend.KernelChoice.AUTO}) {
            try (Run run = Run.open(Path.of(file), new CpuBackend(2, k))) {
                float[] onCpu = run.prefill(run.newSequence(), prompt, prompt.length);
                double err = relativeL2(onMlx, onCpu);
                System.err.println("MlxBackendTest: 1B-shape Q4_0, MLX against the CPU backend (kernels " + k.label() + "): relative L2 " + err);
                assertTrue(err < 0.1, "relative L2 " + err + " (kernels " + k.label() + ")");
            }
        }
    }

    @Test
    void prefillInChunksOfOneAndSevenEqualsOneChunk() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        JsonNode ref = reference();
        int[] prompt = Arrays.copyOf(ints(ref.get("all_tokens")), 20);   // the prompt and its first 15 greedy ids
        try (Run run = Run.open(shared("models/stories260K.gguf"), new MlxBackend(mlx))) {
            KvStore whole = run.newSequence();
            float[] one = run.prefill(whole, prompt, prompt.length);
            int[] want = run.greedy(whole, one, 12);
            for (int chunk : new int[] {1, 7}) {
                KvStore kv = run.newSequence();
                float[] logits = run.prefill(kv, prompt, chunk);
                assertEquals(prompt.length, kv.length());
                assertTrue(relativeL2(logits, one) < 1e-5, "chunks of " + chunk + ": " + relativeL2(logits, one));
                assertArrayEquals(want, run.greedy(kv, logits, 12), "greedy ids after prefill in chunks of " + chunk);
            }
            assertArrayEquals(Arrays.copyOfRange(ints(ref.get("all_tokens")), 20, 32), want, "the reference's ids");
        }
    }

    /** Ops that pass every call to {@code delegate} but make matmul call number {@code failAt} (1-based) use {@code bad}. */
    private static Ops failingAt(Ops delegate, AtomicInteger matmuls, int failAt, Weight bad) {
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
    void anMlxErrorInsideAStepIsMlxsMessageTheStepRollsBackAndTheNextStepIsCorrect() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        JsonNode ref = reference();
        int[] prompt = ints(ref.get("prompt_tokens"));
        int[] all = ints(ref.get("all_tokens"));
        try (Run run = Run.open(shared("models/stories260K.gguf"), new MlxBackend(mlx))) {
            Weight bad = run.backend().weight(new HostMatrix("bad", new float[3 * 5], 3, 5));
            KvStore kv = run.newSequence();
            float[] logits = run.prefill(kv, prompt, prompt.length);
            int length = kv.length();
            Ops failing = failingAt(run.backend().ops(), new AtomicInteger(), 9, bad);   // inside layer 1
            MlxException e = assertThrows(MlxException.class, () -> run.step(failing, kv, new int[] {argmax(logits)}));
            assertEquals("mlx_matmul", e.function());
            assertTrue(e.mlxMessage() != null && e.mlxMessage().contains("[matmul]"), e.getMessage());
            assertEquals(length, kv.length(), "the failed step rolled back");
            assertEquals(0, kv.pending());
            // the next step is the reference's
            int[] next = run.greedy(kv, logits, 6);
            assertArrayEquals(Arrays.copyOfRange(all, prompt.length, prompt.length + 6), next);
        }
    }

    @Test
    void fiftyStepsWithInjectedFailuresAndUnreadPassesLeaveNoArraysBehind() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        JsonNode ref = reference();
        int[] all = ints(ref.get("all_tokens"));
        MlxBackend backend = new MlxBackend(mlx);
        try (Run run = Run.open(shared("models/stories260K.gguf"), backend)) {
            Weight bad = backend.weight(new HostMatrix("bad", new float[3 * 5], 3, 5));
            KvStore warm = run.newSequence();
            run.step(backend.ops(), warm, new int[] {all[0]});
            long baseline = mlx.activeMemory();
            int liveBaseline = backend.liveArrays();
            SequenceKv sequence = run.pool().newSequence();
            KvStore kv = backend.newKvStore(sequence);
            for (int i = 0; i < 50; i++) {
                if (i % 5 == 2) {
                    Ops failing = failingAt(backend.ops(), new AtomicInteger(), 1 + i % 20, bad);
                    assertThrows(MlxException.class, () -> run.step(failing, kv, new int[] {all[kv.length()]}));
                } else if (i % 7 == 4) {   // a prefill chunk whose logits are not read: its pass ends at the next begin
                    int[] chunk = {all[kv.length()]};
                    Segment segment = new Segment(chunk, kv.length(), kv);
                    kv.begin(1);
                    run.arch().forward(backend.ops(), List.of(segment));
                    kv.commit();
                } else {
                    run.step(backend.ops(), kv, new int[] {all[kv.length()]});
                }
            }
            assertEquals(40, kv.length());
            run.step(backend.ops(), kv, new int[] {all[kv.length()]});
            int layers = run.arch().config().kvLayers();
            assertEquals(liveBaseline + 2 * layers, backend.liveArrays(), "live MLX arrays after 50 steps: the baseline and the open sequence's keys and values");
            sequence.close();   // its keys and values are freed with it
            assertEquals(liveBaseline, backend.liveArrays(), "live MLX arrays after 50 steps and the sequence closed");
            assertEquals(baseline, mlx.activeMemory(), "mlx_get_active_memory after 50 steps and the sequence closed");
        }
    }

    @Test
    void everyArchitectureForkpointKnowsRunsAndAnyOtherIsRefusedNamingIt() throws IOException {
        Mlx mlx = MlxTestLibrary.require();
        try (MlxBackend backend = new MlxBackend(mlx)) {
            for (String name : dev.forkpoint.model.Architectures.supportedNames().split(", ")) backend.checkArchitecture(name);
            InvalidInputException e = assertThrows(InvalidInputException.class, () -> backend.checkArchitecture("gemma3"));
            assertEquals("architecture gemma3: the MLX backend runs llama, qwen2, qwen3, qwen35, qwen35moe, qwen3next, qwen3moe;"
                    + " use --backend cpu", e.getMessage());
            // a hybrid folder now loads on MLX (its ops: MlxHybridTest)
            Path hybrid = shared("models/qwen35-tiny-dense");
            try (ModelFiles files = ModelFiles.open(hybrid)) {
                int before = backend.liveArrays();
                Architecture arch = files.load(backend, n -> {});
                assertEquals("qwen35", arch.config().architecture());
                assertTrue(backend.liveArrays() > before, "the weights were uploaded");
            }
        }
    }

    // ---- weights: quantised matrices against their exact dequantisation ----

    private static float[] random(Random r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) r.nextGaussian();
        return v;
    }

    /** x · wᵀ in double over w's dequantised rows. */
    private static double[][] reference(float[] x, int tokens, float[] w, int rows, int cols) {
        double[][] out = new double[tokens][rows];
        for (int t = 0; t < tokens; t++) {
            for (int r = 0; r < rows; r++) {
                double s = 0;
                for (int c = 0; c < cols; c++) s += (double) x[t * cols + c] * w[r * cols + c];
                out[t][r] = s;
            }
        }
        return out;
    }

    private static void assertProduct(double[][] want, float[][] got, String what) {
        for (int t = 0; t < want.length; t++) {
            for (int r = 0; r < want[t].length; r++) {
                assertEquals(want[t][r], got[t][r], 1e-4 * (1 + Math.abs(want[t][r])), what + " [" + t + "][" + r + "]");
            }
        }
    }

    @Test
    void q8AndQ4BlocksAreConvertedToAffineExactly() {
        Mlx mlx = MlxTestLibrary.require();
        Random random = new Random(14);
        int rows = 6, cols = 96, tokens = 3;
        float[] x = random(random, tokens * cols);
        try (MlxBackend backend = new MlxBackend(mlx); Arena arena = Arena.ofConfined()) {
            Ops ops = backend.ops();
            Weight input = backend.weight(new HostMatrix("x", x, tokens, cols));
            for (GgmlType type : List.of(GgmlType.Q8_0, GgmlType.Q4_0)) {
                float[] w = random(random, rows * cols);
                MemorySegment bytes = arena.allocate(type.bytesFor((long) rows * cols));
                Quantization.quantize(type, w, 0, w.length, bytes, 0);
                float[] exact = new float[rows * cols];
                Quantization.dequantize(type, bytes, 0, exact, 0, exact.length);
                Weight weight = backend.weight(new GgmlTensor("w." + type, type, new long[] {cols, rows}, bytes));
                assertEquals(type.name(), weight.typeName());
                // the table's rows, dequantised by MLX, are the format's values exactly
                float[][] rowsBack = ops.logits(ops.embed(weight, new int[] {0, 5, 2}), backend.weight(
                        new HostMatrix("eye", identity(cols), cols, cols)));
                for (int i = 0; i < 3; i++) {
                    int row = new int[] {0, 5, 2}[i];
                    assertArrayEquals(Arrays.copyOfRange(exact, row * cols, (row + 1) * cols), rowsBack[i], EPS,
                            type + " embedding row " + row);
                }
                float[][] got = ops.logits(ops.embed(input, new int[] {0, 1, 2}), weight);
                assertProduct(reference(x, tokens, exact, rows, cols), got, type + " quantized matmul");
            }
            // an MLX affine matrix as stored
            AffineFormat format = new AffineFormat(4, 32);
            float[] w = random(random, rows * cols);
            AffineTensor affine = AffineCodec.quantize(w, rows, cols, format, GgmlType.F16).toTensor("w.affine", GgmlType.F16, arena);
            float[] exact = new float[rows * cols];
            for (int r = 0; r < rows; r++) AffineCodec.dequantizeRow(affine, r, exact, r * cols);
            Weight weight = backend.weight(affine);
            assertEquals("affine 4-bit g32", weight.typeName());
            assertProduct(reference(x, tokens, exact, rows, cols), ops.logits(ops.embed(input, new int[] {0, 1, 2}), weight),
                    "affine quantized matmul");
        }
    }

    private static float[] identity(int n) {
        float[] v = new float[n * n];
        for (int i = 0; i < n; i++) v[i * n + i] = 1;
        return v;
    }
}
