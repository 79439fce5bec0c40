package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.ExpertWeights;
import dev.forkpoint.backend.ExpertWeights.ExpertRows;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.AffineCodec;
import dev.forkpoint.tensor.AffineFormat;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.Quantization;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The CPU mixture of experts ({@link CpuMoe}) against a float64 reference written here: the weights dequantised row
 * by row ({@link PackedMatrix#dequantizeRow}), every product and sum in double, the routing (softmax, top-k by
 * probability, lower index first on ties, renormalisation) recomputed. Expert kinds: F32, Q8_0 and MLX affine 4-bit
 * (group 64, BF16 scales); layouts: fused gate/up (stride 2I, gate offset 0, up offset I), the same with up before
 * gate (two calls), separate gate and up (stride I); top-1, 2 and 8 of 16, renormalised or not; 1, 5 and 40 rows
 * (at 40 an expert's rows exceed the decode limit and take the prefill GEMM).
 * <p>The quantised kernels multiply Q8_0-quantised activations (d = f16(amax/127), q = rint(x·127/amax) per 32) on
 * the decode path (Q8_0 on the GEMM path too); the reference quantises the same way. The gate/up inputs are the same
 * floats for both, so those quants agree exactly. The down projection's inputs h differ by the kernel's float
 * rounding of g and u, bounded by Δg ≤ 1e-4·Σ|w·x| + 1e-6 (likewise Δu), giving Δh ≤ 1.1·Δg·(|u| + Δu) +
 * (|silu g| + 1.1·Δg)·Δu + 1e-6·|h| (silu′ ≤ 1.1); an element whose quant or block scale could round the other way
 * within that (the scaled value within the margin of a half, or amax/127 within it of an f16 rounding point) is
 * allowed one quant step (and 2⁻⁹·|h| for a block scale). Bound per output element:
 * <pre>Σ_e w_e · (Σ_c |Wd_c| · (Δh_c + allowance_c) + 1e-4 · Σ_c |Wd_c · hq_c| + 1e-6) + 1e-5 · Σ_e w_e·|y_e|</pre>
 * The test data is checked to have no near tie at the top-k boundary (logit gap ≥ 1e-3; the kernel's logits are
 * within ~1e-5). Decode batches (no expert above 16 rows) must equal their rows one at a time bit for bit.
 */
class MoeKernelTest {
    private static final int H = 128, I = 64, E = 16;
    private static WorkerPool pool1, pool2;

    @BeforeAll
    static void pools() {
        pool1 = new WorkerPool(1);
        pool2 = new WorkerPool(2);
    }

    @AfterAll
    static void close() {
        pool1.close();
        pool2.close();
    }

    enum Kind { F32, Q8_0, AFFINE4 }

    enum Layout { FUSED, FUSED_UP_FIRST, SEPARATE }

    private static float[] gaussian(Random rnd, int count, double sigma) {
        float[] w = new float[count];
        for (int i = 0; i < count; i++) w[i] = (float) (rnd.nextGaussian() * sigma);
        return w;
    }

    private static CpuWeight weight(Kind kind, String name, int rows, int cols, Random rnd, double sigma) {
        float[] w = gaussian(rnd, rows * cols, sigma);
        PackedMatrix m = switch (kind) {
            case AFFINE4 -> PackedMatrix.of(AffineCodec.quantize(w, rows, cols, new AffineFormat(4, 64), GgmlType.BF16)
                    .toTensor(name, GgmlType.BF16, Arena.ofAuto()));
            case F32, Q8_0 -> {
                GgmlType t = kind == Kind.F32 ? GgmlType.F32 : GgmlType.Q8_0;
                MemorySegment seg = Arena.ofAuto().allocate(t.bytesFor(w.length));
                Quantization.quantize(t, w, 0, w.length, seg, 0);
                yield PackedMatrix.of(new GgmlTensor(name, t, new long[] {cols, rows}, seg));
            }
        };
        return new CpuWeight(name, m.typeName(), rows, cols, m, null);
    }

    /** Experts of one kind and layout (seeded); topK and renormalisation as given. */
    private static ExpertWeights experts(Kind kind, Layout layout, int topK, boolean renormalize) {
        Random rnd = new Random(kind.ordinal() * 100L + layout.ordinal());
        CpuWeight router = ROUTER;
        ExpertRows gate, up;
        if (layout == Layout.SEPARATE) {
            gate = new ExpertRows(weight(kind, "blk.0.ffn_gate_exps.weight", E * I, H, rnd, 0.3), I, 0, I);
            up = new ExpertRows(weight(kind, "blk.0.ffn_up_exps.weight", E * I, H, rnd, 0.3), I, 0, I);
        } else {
            CpuWeight gu = weight(kind, "blk.0.ffn_gate_up_exps.weight", E * 2 * I, H, rnd, 0.3);
            boolean upFirst = layout == Layout.FUSED_UP_FIRST;
            gate = new ExpertRows(gu, 2 * I, upFirst ? I : 0, I);
            up = new ExpertRows(gu, 2 * I, upFirst ? 0 : I, I);
        }
        ExpertRows down = new ExpertRows(weight(kind, "blk.0.ffn_down_exps.weight", E * H, I, rnd, 0.3), H, 0, H);
        return new ExpertWeights(router, gate, up, down, E, topK, renormalize);
    }

    /** One router for every test (so that {@link #input} can keep clear of near ties): F32, N(0, 0.3²). */
    private static final CpuWeight ROUTER = weight(Kind.F32, "blk.0.ffn_gate_inp.weight", E, H, new Random(1), 0.3);

    private static ExpertWeights with(ExpertWeights x, int topK, boolean renormalize) {
        return new ExpertWeights(x.router(), x.gate(), x.up(), x.down(), x.count(), topK, renormalize);
    }

    private static PackedMatrix m(ExpertRows r) { return ((CpuWeight) r.weight()).matrix(); }

    /** count rows from first of m, dequantised, as doubles. */
    private static double[][] rowsOf(PackedMatrix m, int first, int count) {
        double[][] out = new double[count][];
        float[] row = new float[m.cols()];
        for (int r = 0; r < count; r++) {
            m.dequantizeRow(first + r, row, 0);
            out[r] = new double[row.length];
            for (int c = 0; c < row.length; c++) out[r][c] = row[c];
        }
        return out;
    }

    /** Q8_0 quantisation as the kernels apply it, of v (rounded to float) with per-element error margins dv: quants and allowances. */
    private static double[][] q8(double[] v, double[] dv) {
        int len = v.length;
        double[] q = new double[len], allow = new double[len];
        for (int b = 0; b < len / 32; b++) {
            float amax = 0;
            double dmax = 0;
            for (int j = b * 32; j < b * 32 + 32; j++) {
                amax = Math.max(amax, Math.abs((float) v[j]));
                dmax = Math.max(dmax, dv[j]);
            }
            float d = Float.float16ToFloat(Float.floatToFloat16(amax / 127f));
            float id = amax == 0 ? 0 : 127f / amax;
            boolean blockAmbiguous = Float.floatToFloat16((float) ((amax - dmax) / 127)) != Float.floatToFloat16((float) ((amax + dmax) / 127));
            for (int j = b * 32; j < b * 32 + 32; j++) {
                float s = (float) v[j] * id;
                q[j] = Math.rint(s) * (double) d;
                double toHalf = Math.abs(Math.abs(s - Math.floor(s)) - 0.5);
                double margin = 1.01 * (dv[j] * id + Math.abs(s) * (amax == 0 ? 0 : dmax / amax)) + 1e-5;
                if (blockAmbiguous) allow[j] = 1.01 * d + Math.abs(v[j]) * 0x1p-9;
                else if (toHalf < margin) allow[j] = 1.01 * d;
            }
        }
        return new double[][] {q, allow};
    }

    private static boolean quantises(Kind kind, int rowsPerExpert) {
        return kind == Kind.Q8_0 || (kind == Kind.AFFINE4 && rowsPerExpert <= KernelSupport.DECODE_MAX_ROWS);
    }

    /** {reference outputs, bounds}, each n × H. */
    private static double[][] reference(ExpertWeights ew, Kind kind, float[] x, int n) {
        int k = ew.topK();
        double[][] router = rowsOf(((CpuWeight) ew.router()).matrix(), 0, E);
        int[][] chosen = new int[n][];
        double[][] w = new double[n][];
        int[] perExpert = new int[E];
        for (int t = 0; t < n; t++) {
            double[] logit = new double[E];
            double max = Double.NEGATIVE_INFINITY;
            for (int e = 0; e < E; e++) {
                for (int c = 0; c < H; c++) logit[e] += router[e][c] * x[t * H + c];
                max = Math.max(max, logit[e]);
            }
            double sum = 0;
            double[] p = new double[E];
            for (int e = 0; e < E; e++) sum += p[e] = Math.exp(logit[e] - max);
            for (int e = 0; e < E; e++) p[e] /= sum;
            Integer[] order = IntStream.range(0, E).boxed().sorted(Comparator.comparingDouble((Integer e) -> -p[e])).toArray(Integer[]::new);
            if (k < E) {
                assertTrue(logit[order[k - 1]] - logit[order[k]] > 1e-3, "test data: near tie at the top-" + k + " boundary, row " + t);
            }
            chosen[t] = new int[k];
            w[t] = new double[k];
            double total = 0;
            for (int j = 0; j < k; j++) total += p[order[j]];
            for (int j = 0; j < k; j++) {
                chosen[t][j] = order[j];
                w[t][j] = ew.renormalize() ? p[order[j]] / total : p[order[j]];
                perExpert[order[j]]++;
            }
        }
        double[] ref = new double[n * H], bound = new double[n * H];
        for (int t = 0; t < n; t++) {
            for (int j = 0; j < k; j++) {
                int e = chosen[t][j];
                boolean quant = quantises(kind, perExpert[e]);
                double[][] wg = rowsOf(m(ew.gate()), ew.gate().firstRow(e), I);
                double[][] wu = rowsOf(m(ew.up()), ew.up().firstRow(e), I);
                double[][] wd = rowsOf(m(ew.down()), ew.down().firstRow(e), H);
                double[] xt = new double[H];
                for (int c = 0; c < H; c++) xt[c] = x[t * H + c];
                double[] xq = quant ? q8(xt, new double[H])[0] : xt;
                double[] h = new double[I], dh = new double[I];
                for (int r = 0; r < I; r++) {
                    double g = 0, u = 0, mg = 0, mu = 0;
                    for (int c = 0; c < H; c++) {
                        g += wg[r][c] * xq[c];
                        mg += Math.abs(wg[r][c] * xq[c]);
                        u += wu[r][c] * xq[c];
                        mu += Math.abs(wu[r][c] * xq[c]);
                    }
                    double dg = 1e-4 * mg + 1e-6, du = 1e-4 * mu + 1e-6;
                    double silu = g / (1 + Math.exp(-g));
                    h[r] = silu * u;
                    dh[r] = 1.1 * dg * (Math.abs(u) + du) + (Math.abs(silu) + 1.1 * dg) * du + 1e-6 * Math.abs(h[r]);
                }
                double[] hq = h, allow = new double[I];
                if (quant) {
                    double[][] qa = q8(h, dh);
                    hq = qa[0];
                    allow = qa[1];
                }
                for (int r = 0; r < H; r++) {
                    double y = 0, err = 0, mag = 0;
                    for (int c = 0; c < I; c++) {
                        y += wd[r][c] * hq[c];
                        mag += Math.abs(wd[r][c] * hq[c]);
                        err += Math.abs(wd[r][c]) * (dh[c] + allow[c]);
                    }
                    ref[t * H + r] += w[t][j] * y;
                    bound[t * H + r] += w[t][j] * (err + 1e-4 * mag + 1e-6) + 1e-5 * w[t][j] * Math.abs(y);
                }
            }
        }
        return new double[][] {ref, bound};
    }

    /**
     * n rows of N(0, 1) values (seeded), each redrawn until its router logits have no near tie (gap under 1e-3) at
     * the top-1, top-2 or top-8 boundary, where the kernel's float logits could order two experts the other way.
     */
    private static float[] input(int n, long seed) {
        Random rnd = new Random(seed);
        double[][] router = rowsOf(ROUTER.matrix(), 0, E);
        float[] x = new float[n * H];
        for (int t = 0; t < n; t++) {
            while (true) {
                float[] row = gaussian(rnd, H, 1.0);
                double[] logit = new double[E];
                for (int e = 0; e < E; e++) for (int c = 0; c < H; c++) logit[e] += router[e][c] * row[c];
                double[] sorted = logit.clone();
                Arrays.sort(sorted);
                boolean clear = true;
                for (int k : new int[] {1, 2, 8}) clear &= sorted[E - k] - sorted[E - k - 1] > 1e-3;
                if (clear) {
                    System.arraycopy(row, 0, x, t * H, H);
                    break;
                }
            }
        }
        return x;
    }

    private static void assertWithin(double[][] refBound, float[] got, String what) {
        double[] ref = refBound[0], bound = refBound[1];
        double worst = 0;
        for (int i = 0; i < ref.length; i++) {
            double err = Math.abs(got[i] - ref[i]);
            worst = Math.max(worst, err / bound[i]);
            if (!(err <= bound[i])) {
                fail(what + ": row " + i / H + " col " + i % H + ": " + got[i] + " vs " + ref[i] + " (bound " + bound[i] + ")");
            }
        }
        assertTrue(worst <= 1, what);
    }

    @Test
    void forwardMatchesFloat64Reference() {
        for (Kind kind : Kind.values()) {
            for (Layout layout : Layout.values()) {
                ExpertWeights base = experts(kind, layout, 1, false);
                for (int topK : new int[] {1, 2, 8}) {
                    for (boolean renorm : new boolean[] {false, true}) {
                        ExpertWeights ew = with(base, topK, renorm);
                        for (int n : new int[] {1, 5}) {
                            float[] x = input(n, 17 + n);
                            CpuActivation out = CpuMoe.forward(new CpuActivation(x, n, H), ew, pool2);
                            assertEquals(n, out.tokens());
                            assertEquals(H, out.width());
                            assertWithin(reference(ew, kind, x, n), out.data(),
                                    kind + " " + layout + " top-" + topK + (renorm ? " renormalised" : "") + " n=" + n);
                        }
                    }
                }
            }
        }
    }

    /** 40 rows, top-8 of 16: about 20 rows per expert, past the decode limit, so the experts' rows take the GEMM. */
    @Test
    void prefillBatchMatchesFloat64Reference() {
        for (Kind kind : Kind.values()) {
            for (Layout layout : new Layout[] {Layout.FUSED, Layout.SEPARATE}) {
                ExpertWeights ew = experts(kind, layout, 8, true);
                float[] x = input(40, 99);
                CpuActivation out = CpuMoe.forward(new CpuActivation(x, 40, H), ew, pool2);
                assertWithin(reference(ew, kind, x, 40), out.data(), kind + " " + layout + " prefill");
            }
        }
    }

    @Test
    void batchedRowsEqualEachRowAlone() {
        int n = 7;
        float[] x = input(n, 5);
        for (Kind kind : Kind.values()) {
            for (Layout layout : Layout.values()) {
                for (int topK : new int[] {2, 8}) {
                    ExpertWeights ew = experts(kind, layout, topK, topK == 8);
                    // the batch shares experts (so it is a real batch) and no expert exceeds the decode limit
                    int[] per = routeCounts(ew, x, n);
                    assertTrue(Arrays.stream(per).max().orElseThrow() > 1 && Arrays.stream(per).max().orElseThrow() <= KernelSupport.DECODE_MAX_ROWS);
                    float[] batch = CpuMoe.forward(new CpuActivation(x, n, H), ew, pool2).data();
                    for (int t = 0; t < n; t++) {
                        float[] one = CpuMoe.forward(new CpuActivation(Arrays.copyOfRange(x, t * H, (t + 1) * H), 1, H), ew,
                                t % 2 == 0 ? pool1 : pool2).data();
                        for (int c = 0; c < H; c++) {
                            assertEquals(Float.floatToRawIntBits(one[c]), Float.floatToRawIntBits(batch[t * H + c]),
                                    kind + " " + layout + " top-" + topK + " row " + t + " col " + c + ": " + batch[t * H + c] + " vs " + one[c]);
                        }
                    }
                }
            }
        }
    }

    private static int[] routeCounts(ExpertWeights ew, float[] x, int n) {
        float[] logits = new float[n * E];
        ((CpuWeight) ew.router()).matrix().multiply(x, n, logits, pool1);
        int[] per = new int[E];
        CpuMoe.route(logits, n, E, ew.topK(), ew.renormalize(), new int[n * ew.topK()], new float[n * ew.topK()], per);
        return per;
    }

    @Test
    void routingChoosesTheLargestWithTiesToTheLowerIndex() {
        float[] logits = {0, 3, 1, 3, 2, 3, -1, 0};   // 3 at experts 1, 3, 5
        int[] chosen = new int[2];
        float[] w = new float[2];
        int[] per = new int[8];
        CpuMoe.route(logits, 1, 8, 2, false, chosen, w, per);
        assertArrayEquals(new int[] {1, 3}, chosen);
        double z = 0;
        for (float l : logits) z += Math.exp(l - 3);
        assertEquals(1 / z, w[0], 1e-7);
        assertEquals(1 / z, w[1], 1e-7);
        assertEquals(1, per[1]);
        assertEquals(1, per[3]);
        assertEquals(0, per[5]);

        float[] flat = new float[16];
        int[] c8 = new int[8];
        float[] w8 = new float[8];
        CpuMoe.route(flat, 1, 16, 8, true, c8, w8, new int[16]);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7}, c8);
        for (float v : w8) assertEquals(0.125f, v);

        // renormalised weights of the chosen experts sum to 1; two rows routed independently
        float[] two = {5, 1, 4, 0, /**/ 0, 0, 9, 8};
        int[] c2 = new int[4];
        float[] w2 = new float[4];
        int[] per2 = new int[4];
        CpuMoe.route(two, 2, 4, 2, true, c2, w2, per2);
        assertArrayEquals(new int[] {0, 2, 2, 3}, c2);
        assertEquals(1.0, w2[0] + w2[1], 1e-6);
        assertEquals(1 / (1 + Math.exp(-1)), w2[0], 1e-6);
        assertArrayEquals(new int[] {1, 0, 2, 1}, per2);
    }

    /** One decode row reads the router and exactly topK experts' gate, up and down rows; counted through the backend ops. */
    @Test
    void decodeReadsOnlyTheChosenExperts() {
        CpuOps ops = new CpuOps(pool2);
        for (Kind kind : Kind.values()) {
            for (Layout layout : new Layout[] {Layout.FUSED, Layout.SEPARATE}) {
                for (int topK : new int[] {1, 2, 8}) {
                    ExpertWeights ew = experts(kind, layout, topK, false);
                    long before = CpuBackend.moeWeightBytesRead();
                    ops.moe(new CpuActivation(input(1, 3), 1, H), ew);
                    long read = CpuBackend.moeWeightBytesRead() - before;
                    long router = (long) E * H * 4;
                    long gateRow = switch (kind) {   // bytes per row of H values
                        case F32 -> H * 4L;
                        case Q8_0 -> H / 32 * 34L;
                        case AFFINE4 -> H / 2 + 2 * (H / 64) * 2L;   // codes + BF16 scale and bias per 64
                    };
                    long downRow = switch (kind) {   // I values
                        case F32 -> I * 4L;
                        case Q8_0 -> I / 32 * 34L;
                        case AFFINE4 -> I / 2 + 2 * (I / 64) * 2L;
                    };
                    long perExpert = 2L * I * gateRow + (long) H * downRow;
                    assertEquals(router + topK * perExpert, read, kind + " " + layout + " top-" + topK);
                    assertTrue(read < router + E * perExpert || topK == E);
                }
            }
        }
    }

    @Test
    void badInputsAreRejected() {
        ExpertWeights ew = experts(Kind.F32, Layout.FUSED, 2, false);
        assertThrows(IllegalArgumentException.class, () -> CpuMoe.forward(new CpuActivation(new float[64], 1, 64), ew, pool1));
    }
}
