package dev.forkpoint.metal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.metal.mlxc.Mlx;
import dev.forkpoint.metal.mlxc.MlxTestLibrary;
import dev.forkpoint.tensor.HostMatrix;
import java.util.List;
import java.util.Random;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Each op the dense architectures use, on the MLX backend and on the CPU backend (the reference semantics), from the
 * same inputs: the parts stories260K does not reach (Qwen's q/k norms, biases, NeoX RoPE, Llama 3 frequency factors,
 * partial rotation, grouped-query attention over several segments, F16 KV pages). Run when MLX-C is found.
 */
@Tag("mlx")
class MlxOpsTest {

    private static final int TOKENS = 5;

    private static float[] random(Random r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) r.nextGaussian();
        return v;
    }

    /**
     * The ops of both backends on the same host inputs: {@code build} makes the results on a backend; each result is
     * compared from a fresh pair of backends (reading logits ends the MLX backend's pass, which frees the others).
     */
    private static void same(String what, long seed, BiFunction<Backend, Random, Activation[]> build) {
        Mlx mlx = MlxTestLibrary.require();
        for (int i = 0, count = 1; i < count; i++) {
            try (MlxBackend gpu = new MlxBackend(mlx); CpuBackend cpu = new CpuBackend(1)) {
                Activation[] g = build.apply(gpu, new Random(seed));
                Activation[] c = build.apply(cpu, new Random(seed));
                count = c.length;
                int width = c[i].width();
                float[][] gv = gpu.ops().logits(g[i], gpu.weight(new HostMatrix("eye", identity(width), width, width)));
                float[][] cv = cpu.ops().logits(c[i], cpu.weight(new HostMatrix("eye", identity(width), width, width)));
                assertEquals(cv.length, gv.length, what + " rows");
                for (int t = 0; t < cv.length; t++) {
                    for (int j = 0; j < cv[t].length; j++) {
                        assertEquals(cv[t][j], gv[t][j], 2e-5 * (1 + Math.abs(cv[t][j])), what + " [" + i + "][" + t + "][" + j + "]");
                    }
                }
            }
        }
    }

    private static float[] identity(int n) {
        float[] v = new float[n * n];
        for (int i = 0; i < n; i++) v[i * n + i] = 1;
        return v;
    }

    /** A TOKENS × width activation of random values (the embedding of a random table's rows). */
    private static Activation input(Backend b, Random r, int tokens, int width) {
        Weight table = b.weight(new HostMatrix("table", random(r, tokens * width), tokens, width));
        int[] ids = new int[tokens];
        for (int i = 0; i < tokens; i++) ids[i] = i;
        return b.ops().embed(table, ids);
    }

    @Test
    void normsBiasesAndSwiglu() {
        same("norms", 1, (b, r) -> {
            Ops o = b.ops();
            Activation x = input(b, r, TOKENS, 48);
            Weight gamma = b.weight(new HostMatrix("g", random(r, 48), 1, 48));
            Weight headGamma = b.weight(new HostMatrix("gh", random(r, 16), 1, 16));
            Weight bias = b.weight(new HostMatrix("b", random(r, 48), 1, 48));
            Activation y = input(b, r, TOKENS, 48);
            return new Activation[] {o.rmsNorm(x, gamma, 1e-6f), o.rmsNormHeads(x, headGamma, 16, 1e-5f),
                    o.addBias(x, bias), o.swiglu(x, y), o.add(x, y), o.rows(x, new int[] {4, 0, 2})};
        });
    }

    @Test
    void ropeNormalNeoxPartialAndWithFrequencyFactors() {
        float[] factors = new float[8];
        for (int i = 0; i < factors.length; i++) factors[i] = 1 + i * 0.75f;
        same("rope", 2, (b, r) -> {
            Ops o = b.ops();
            Activation x = input(b, r, TOKENS, 64);
            int[] positions = {0, 1, 2, 7, 8};   // two runs, as two segments give
            return new Activation[] {
                    o.rope(x, 16, positions, new Rope(16, 10000, false, null)),
                    o.rope(x, 16, positions, new Rope(16, 1e6, true, null)),
                    o.rope(x, 32, positions, new Rope(16, 500000, true, factors)),
                    o.rope(x, 16, new int[] {3, 4, 5, 6, 7}, new Rope(8, 10000, false, null))};
        });
    }

    @Test
    void groupedQueryAttentionOverSeveralSegmentsAndF16Pages() {
        for (KvElementType type : KvElementType.values()) {
            same("attention " + type, 3, (b, r) -> {
                Ops o = b.ops();
                int heads = 4, kvHeads = 2, headDim = 8, layers = 2;
                KvLayout layout = new KvLayout(layers, kvHeads * headDim, type, 4);
                PagePool pool = new PagePool(layout, layout.budgetFor(64, 4));
                KvStore a = b.newKvStore(pool.newSequence()), c = b.newKvStore(pool.newSequence());
                // a first step on each sequence alone: 6 positions on a, 3 on c
                for (KvStore kv : List.of(a, c)) {
                    int n = kv == a ? 6 : 3;
                    kv.begin(n);
                    for (int layer = 0; layer < layers; layer++) {
                        Activation q = input(b, r, n, heads * headDim), k = input(b, r, n, kvHeads * headDim), v = input(b, r, n, kvHeads * headDim);
                        o.attention(q, k, v, kv, layer, 0, heads, kvHeads, headDim);
                    }
                    kv.commit();
                }
                // then one pass over both: 2 rows of a (positions 6, 7), 3 of c (positions 3…5)
                List<Segment> segments = List.of(new Segment(new int[2], 6, a), new Segment(new int[3], 3, c));
                a.begin(2);
                c.begin(3);
                Activation[] out = new Activation[layers];
                for (int layer = 0; layer < layers; layer++) {
                    Activation q = input(b, r, 5, heads * headDim), k = input(b, r, 5, kvHeads * headDim), v = input(b, r, 5, kvHeads * headDim);
                    out[layer] = o.attention(q, k, v, segments, layer, heads, kvHeads, headDim);
                }
                a.commit();
                c.commit();
                return out;
            });
        }
    }

    @Test
    void attentionOutsideTheOpenStepIsRefused() {
        Mlx mlx = MlxTestLibrary.require();
        try (MlxBackend b = new MlxBackend(mlx)) {
            KvLayout layout = new KvLayout(1, 8, KvElementType.F32, 4);
            try (PagePool pool = new PagePool(layout, layout.budgetFor(16, 1))) {
                KvStore kv = b.newKvStore(pool.newSequence());
                kv.begin(2);
                Random r = new Random(4);
                Activation q = input(b, r, 2, 8), k = input(b, r, 2, 8), v = input(b, r, 2, 8);
                assertThrows(IllegalStateException.class, () -> b.ops().attention(q, k, v, kv, 0, 1, 1, 1, 8));
                kv.rollback();
                assertEquals(0, kv.length());
            }
        }
    }
}
