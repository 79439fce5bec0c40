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
 * partial rotation, grouped-query attention over several segments, F16 KV pages), and the hybrids' ones (columns,
 * gates, norms, the Gated DeltaNet ops over several segments with carried state, the mixture of experts). Run when
 * MLX-C is found.
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
        for (KvElementType type : new KvElementType[] {KvElementType.F32, KvElementType.F16}) {   // MLX refuses quantised KV
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
    // ---- the hybrids' and mixtures' ops ----

    @Test
    void columnsGatesAndNorms() {
        same("hybrid elementwise", 5, (b, r) -> {
            Ops o = b.ops();
            Activation x = input(b, r, TOKENS, 48), z = input(b, r, TOKENS, 48), one = input(b, r, TOKENS, 1);
            Weight gamma = b.weight(new HostMatrix("g", random(r, 16), 1, 16));
            return new Activation[] {o.columns(x, new int[] {40, 3, 3, 17, 0}), o.columns(x, new int[] {8, 9, 10, 11}),
                    o.l2NormHeads(x, 16, 1e-6f, 0.25f), o.l2NormHeads(x, 12, 1e-6f, 1f), o.sigmoidGate(x, z),
                    o.sigmoidGate(x, one), o.gatedRmsNorm(x, z, gamma, 16, 1e-6f)};
        });
    }

    /**
     * The Gated DeltaNet ops with carried state: a first step on each of two sequences alone (20 tokens: the CPU
     * takes its chunked form; 3 tokens: its recurrent form), then one pass over both (2 and 3 rows), which continues
     * each sequence's window and matrix; value heads sharing key heads (4 of 2).
     */
    @Test
    void causalConvAndTheGatedDeltaRuleContinueEachSegmentsState() {
        int hk = 2, hv = 4, dk = 8, dv = 6, taps = 4, channels = 2 * hk * dk + hv * dv;
        same("gated delta net", 6, (b, r) -> {
            Ops o = b.ops();
            var layout = new dev.forkpoint.backend.RecurrentLayout(2, channels, taps, hv, dk, dv);
            KvLayout kvLayout = new KvLayout(1, 8, KvElementType.F32, 4);
            PagePool pool = new PagePool(kvLayout, kvLayout.budgetFor(64, 4));
            KvStore a = b.newKvStore(pool.newSequence(), layout), c = b.newKvStore(pool.newSequence(), layout);
            Weight[] kernel = new Weight[2], aLog = new Weight[2], dtBias = new Weight[2];
            for (int l = 0; l < 2; l++) {
                kernel[l] = b.weight(new HostMatrix("conv" + l, random(r, channels * taps), channels, taps));
                aLog[l] = b.weight(new HostMatrix("A_log" + l, random(r, hv), 1, hv));
                dtBias[l] = b.weight(new HostMatrix("dt_bias" + l, random(r, hv), 1, hv));
            }
            java.util.function.Function<List<Segment>, Activation[]> layers = segments -> {
                int n = Segment.rows(segments);
                Activation[] out = new Activation[4];
                for (int l = 0; l < 2; l++) {
                    Activation conv = o.causalConv1dSilu(input(b, r, n, channels), kernel[l], segments, l);
                    Activation q = o.l2NormHeads(o.columns(conv, range(0, hk * dk)), dk, 1e-6f, (float) (1 / Math.sqrt(dk)));
                    Activation k = o.l2NormHeads(o.columns(conv, range(hk * dk, hk * dk)), dk, 1e-6f, 1f);
                    Activation v = o.columns(conv, range(2 * hk * dk, hv * dv));
                    out[2 * l] = conv;
                    out[2 * l + 1] = o.gatedDeltaRule(q, k, v, input(b, r, n, hv), input(b, r, n, hv), aLog[l], dtBias[l],
                            segments, l, hk, hv, dk, dv);
                }
                return out;
            };
            for (KvStore kv : List.of(a, c)) {
                int n = kv == a ? 20 : 3;
                kv.begin(n);
                layers.apply(List.of(new Segment(new int[n], 0, kv)));
                kv.prepareCommit();
                kv.commit();
            }
            a.begin(2);
            c.begin(3);
            Activation[] out = layers.apply(List.of(new Segment(new int[2], 20, a), new Segment(new int[3], 3, c)));
            a.commit();
            c.commit();
            return out;
        });
    }

    private static int[] range(int from, int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) v[i] = from + i;
        return v;
    }

    /**
     * The mixture over 7 rows: 6 experts, top-2, renormalised or not; gate and up fused in one stacked tensor (rows of
     * expert e at e·2I) or separate, as float32 or MLX affine 4-bit matrices (a slice of the codes, scales and biases).
     */
    @Test
    void mixtureOfExpertsFusedSeparateAndQuantised() {
        int experts = 6, dim = 64, ffn = 32, rows = 7;
        same("moe", 7, (b, r) -> {
            Ops o = b.ops();
            Activation x = input(b, r, rows, dim);
            Weight router = b.weight(new HostMatrix("router", random(r, experts * dim), experts, dim));
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                Activation[] out = new Activation[3];
                for (int variant = 0; variant < 3; variant++) {
                    float[] gu = random(r, experts * 2 * ffn * dim), down = random(r, experts * dim * ffn);
                    for (int i = 0; i < down.length; i++) down[i] *= 0.1f;
                    boolean quantised = variant == 2;
                    Weight guW = matrix(b, "gate_up", gu, experts * 2 * ffn, dim, quantised, arena);
                    Weight downW = matrix(b, "down", down, experts * dim, ffn, quantised, arena);
                    dev.forkpoint.backend.ExpertWeights w;
                    if (variant == 1) {   // separate gate and up tensors, each [E, I, H]
                        float[] g = new float[experts * ffn * dim], u = new float[experts * ffn * dim];
                        for (int e = 0; e < experts; e++) {
                            System.arraycopy(gu, e * 2 * ffn * dim, g, e * ffn * dim, ffn * dim);
                            System.arraycopy(gu, (e * 2 + 1) * ffn * dim, u, e * ffn * dim, ffn * dim);
                        }
                        Weight gW = matrix(b, "gate", g, experts * ffn, dim, false, arena), uW = matrix(b, "up", u, experts * ffn, dim, false, arena);
                        w = new dev.forkpoint.backend.ExpertWeights(router, new dev.forkpoint.backend.ExpertWeights.ExpertRows(gW, ffn, 0, ffn),
                                new dev.forkpoint.backend.ExpertWeights.ExpertRows(uW, ffn, 0, ffn),
                                new dev.forkpoint.backend.ExpertWeights.ExpertRows(downW, dim, 0, dim), experts, 2, false);
                    } else {
                        w = new dev.forkpoint.backend.ExpertWeights(router, new dev.forkpoint.backend.ExpertWeights.ExpertRows(guW, 2 * ffn, 0, ffn),
                                new dev.forkpoint.backend.ExpertWeights.ExpertRows(guW, 2 * ffn, ffn, ffn),
                                new dev.forkpoint.backend.ExpertWeights.ExpertRows(downW, dim, 0, dim), experts, 2, true);
                    }
                    out[variant] = o.moe(x, w);
                }
                return out;
            }
        });
    }

    /**
     * A float32 matrix, or an MLX affine 4-bit one: on MLX as quantised, on the CPU as its exact dequantised values
     * (the CPU's quantised kernels round the activations to 8 bits, so its float kernel is the reference here).
     */
    private static Weight matrix(Backend b, String name, float[] v, int rows, int cols, boolean quantised, java.lang.foreign.Arena arena) {
        if (!quantised) return b.weight(new HostMatrix(name, v, rows, cols));
        var t = dev.forkpoint.tensor.AffineCodec.quantize(v, rows, cols, new dev.forkpoint.tensor.AffineFormat(4, 32),
                dev.forkpoint.tensor.GgmlType.F16).toTensor(name, dev.forkpoint.tensor.GgmlType.F16, arena);
        if (b instanceof MlxBackend) return b.weight(t);
        float[] exact = new float[rows * cols];
        for (int row = 0; row < rows; row++) dev.forkpoint.tensor.AffineCodec.dequantizeRow(t, row, exact, row * cols);
        return b.weight(new HostMatrix(name, exact, rows, cols));
    }
}
