package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Gated DeltaNet kernels (causal conv1d + SiLU, gated delta rule in both forms) against float64 loops written
 * from the formulas, over the store's step protocol (carried state, rollback, batched segments).
 */
class GatedDeltaNetKernelTest {
    static final WorkerPool POOL = new WorkerPool(2);
    static final double TOL = 1e-5;

    private final PagePool pagePool = new PagePool(KvLayout.of(1, 8, KvElementType.F32), 1 << 22);
    private final List<SequenceKv> sequences = new ArrayList<>();

    @AfterAll
    static void closePool() { POOL.close(); }

    @AfterEach
    void closeSequences() {
        sequences.forEach(SequenceKv::close);
        pagePool.close();
    }

    CpuKvStore store(RecurrentLayout layout) {
        SequenceKv seq = pagePool.newSequence();
        sequences.add(seq);
        return new CpuKvStore(seq, layout);
    }

    // ------------------------------------------------------------------ problem data and float64 references

    /** A whole sequence of delta-rule inputs at a realistic scale. */
    static final class Problem {
        final int tokens, hk, hv, dk, dv;
        final float[] q, k, v, a, b, aLog, dtBias;

        Problem(long seed, int tokens, int hk, int hv, int dk, int dv) {
            this(seed, tokens, hk, hv, dk, dv, 1, 16);
        }

        /** A_log = log(U(aMin, aMax)): (1, 16) is the realistic fast decay, (0.001, 0.1) keeps a long memory. */
        Problem(long seed, int tokens, int hk, int hv, int dk, int dv, double aMin, double aMax) {
            this.tokens = tokens;
            this.hk = hk;
            this.hv = hv;
            this.dk = dk;
            this.dv = dv;
            SplittableRandom r = new SplittableRandom(seed);
            q = normalised(r, tokens * hk, dk, 1 / Math.sqrt(dk));
            k = normalised(r, tokens * hk, dk, 1);
            v = gaussian(r, tokens * hv * dv, 1);
            a = gaussian(r, tokens * hv, 1);
            b = gaussian(r, tokens * hv, 1);
            aLog = new float[hv];
            dtBias = new float[hv];
            for (int h = 0; h < hv; h++) {
                aLog[h] = (float) Math.log(aMin + (aMax - aMin) * r.nextDouble());
                dtBias[h] = (float) (0.1 * r.nextGaussian());
            }
        }

        RecurrentLayout layout(int layers) { return new RecurrentLayout(layers, 8, 4, hv, dk, dv); }

        CpuActivation rows(float[] x, int width, int from, int to) {
            return new CpuActivation(Arrays.copyOfRange(x, from * width, to * width), to - from, width);
        }

        /** float64 loops: the outputs (tokens × hv·dv) and the final state, from state s (modified). */
        double[] reference(double[] s) {
            double[] out = new double[tokens * hv * dv];
            int r = hv / hk;
            for (int t = 0; t < tokens; t++) {
                for (int h = 0; h < hv; h++) {
                    int kh = h / r, sOff = h * dk * dv;
                    double x = a[t * hv + h] + (double) dtBias[h];
                    double softplus = Math.log1p(Math.exp(-Math.abs(x))) + Math.max(x, 0);
                    double decay = Math.exp(-Math.exp(aLog[h]) * softplus);
                    double beta = 1 / (1 + Math.exp(-b[t * hv + h]));
                    for (int i = 0; i < dk * dv; i++) s[sOff + i] *= decay;
                    double[] kv = new double[dv];
                    for (int i = 0; i < dk; i++) {
                        for (int j = 0; j < dv; j++) kv[j] += s[sOff + i * dv + j] * k[(t * hk + kh) * dk + i];
                    }
                    for (int i = 0; i < dk; i++) {
                        for (int j = 0; j < dv; j++) {
                            double delta = (v[(t * hv + h) * dv + j] - kv[j]) * beta;
                            s[sOff + i * dv + j] += k[(t * hk + kh) * dk + i] * delta;
                        }
                    }
                    for (int j = 0; j < dv; j++) {
                        double o = 0;
                        for (int i = 0; i < dk; i++) o += s[sOff + i * dv + j] * q[(t * hk + kh) * dk + i];
                        out[(t * hv + h) * dv + j] = o;
                    }
                }
            }
            return out;
        }
    }

    static float[] gaussian(SplittableRandom r, int n, double scale) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (scale * r.nextGaussian());
        return x;
    }

    /** groups rows of dim values, each l2-normalised then scaled. */
    static float[] normalised(SplittableRandom r, int groups, int dim, double scale) {
        float[] x = gaussian(r, groups * dim, 1);
        for (int g = 0; g < groups; g++) {
            double ss = 0;
            for (int i = 0; i < dim; i++) ss += (double) x[g * dim + i] * x[g * dim + i];
            double f = scale / Math.sqrt(ss + 1e-6);
            for (int i = 0; i < dim; i++) x[g * dim + i] = (float) (x[g * dim + i] * f);
        }
        return x;
    }

    enum Form { RECURRENT, CHUNKED, AUTO }

    static CpuActivation rule(Form form, Problem p, int from, int to, List<Segment> segments, int layer) {
        return rule(form, p.rows(p.q, p.hk * p.dk, from, to), p.rows(p.k, p.hk * p.dk, from, to), p.rows(p.v, p.hv * p.dv, from, to),
                p.rows(p.a, p.hv, from, to), p.rows(p.b, p.hv, from, to), p, segments, layer);
    }

    static CpuActivation rule(Form form, CpuActivation q, CpuActivation k, CpuActivation v, CpuActivation a, CpuActivation b,
                              Problem p, List<Segment> segments, int layer) {
        return switch (form) {
            case RECURRENT -> CpuGatedDeltaNet.gatedDeltaRuleRecurrent(q, k, v, a, b, p.aLog, p.dtBias, segments, layer, p.hk, p.hv, p.dk, p.dv, POOL);
            case CHUNKED -> CpuGatedDeltaNet.gatedDeltaRuleChunked(q, k, v, a, b, p.aLog, p.dtBias, segments, layer, p.hk, p.hv, p.dk, p.dv, POOL);
            case AUTO -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b, p.aLog, p.dtBias, segments, layer, p.hk, p.hv, p.dk, p.dv, POOL);
        };
    }

    /** Runs the problem through a fresh store in steps of the given sizes (cycled); returns outputs then final state. */
    float[][] runSteps(Form form, Problem p, int layer, int... steps) {
        CpuKvStore kv = store(p.layout(layer + 1));
        float[] out = new float[p.tokens * p.hv * p.dv];
        for (int pos = 0, i = 0; pos < p.tokens; i++) {
            int n = Math.min(steps[i % steps.length], p.tokens - pos);
            kv.begin(n);
            List<Segment> seg = List.of(new Segment(new int[n], pos, kv));
            for (int l = 0; l < layer; l++) rule(form, p, pos, pos + n, seg, l);   // a step writes every linear layer
            CpuActivation o = rule(form, p, pos, pos + n, seg, layer);
            kv.commit();
            System.arraycopy(o.data(), 0, out, pos * p.hv * p.dv, o.data().length);
            pos += n;
        }
        return new float[][] {out, kv.recurrent().state(layer).clone()};
    }

    static void assertClose(double[] want, float[] got, double tol, String what) {
        assertEquals(want.length, got.length, what + ": length");
        double worst = 0;
        int at = -1;
        for (int i = 0; i < want.length; i++) {
            double e = Math.abs(want[i] - got[i]);
            if (!(e <= worst)) {
                worst = e;
                at = i;
            }
        }
        if (Boolean.getBoolean("gdn.test.verbose")) System.out.println(what + ": max |error| " + worst);
        if (worst > tol) throw new AssertionError(what + ": |error| " + worst + " at " + at + " (want " + want[at] + ", got " + got[at] + ")");
    }

    static void assertClose(float[] want, float[] got, double tol, String what) {
        double[] w = new double[want.length];
        for (int i = 0; i < w.length; i++) w[i] = want[i];
        assertClose(w, got, tol, what);
    }

    // ------------------------------------------------------------------ gated delta rule

    @Test
    void bothFormsMatchFloat64ReferenceForLengthsUpTo300() {
        bothFormsMatchReference(new Problem(11, 300, 2, 4, 128, 128));
    }

    @Test
    void bothFormsMatchFloat64ReferenceWithSlowDecay() {
        bothFormsMatchReference(new Problem(17, 300, 2, 4, 128, 128, 0.001, 0.1));
    }

    void bothFormsMatchReference(Problem whole) {
        int[] lengths = {1, 2, 3, 15, 31, 32, 63, 64, 65, 100, 127, 128, 129, 191, 200, 257, 300};
        for (int len : lengths) {
            Problem p = prefix(whole, len);
            double[] state = new double[p.hv * p.dk * p.dv];
            double[] want = p.reference(state);
            float[][] rec = runSteps(Form.RECURRENT, p, 0, len);
            float[][] chk = runSteps(Form.CHUNKED, p, 0, len);
            assertClose(want, rec[0], TOL, "recurrent output, " + len + " tokens");
            assertClose(state, rec[1], TOL, "recurrent state, " + len + " tokens");
            assertClose(want, chk[0], TOL, "chunked output, " + len + " tokens");
            assertClose(state, chk[1], TOL, "chunked state, " + len + " tokens");
            assertClose(rec[0], chk[0], TOL, "chunked vs recurrent output, " + len + " tokens");
            assertClose(rec[1], chk[1], TOL, "chunked vs recurrent state, " + len + " tokens");
        }
    }

    @Test
    void oddDimensionsAndGroupsMatchReference() {
        // dims off the vector width (scalar tails), 3 value heads per key head, second linear layer
        for (int[] dims : new int[][] {{24, 20}, {5, 37}, {48, 16}}) {
            Problem p = new Problem(12 + dims[0], 150, 1, 3, dims[0], dims[1]);
            double[] state = new double[p.hv * p.dk * p.dv];
            double[] want = p.reference(state);
            for (Form form : Form.values()) {
                float[][] got = runSteps(form, p, 1, 150);
                assertClose(want, got[0], TOL, form + " output " + Arrays.toString(dims));
                assertClose(state, got[1], TOL, form + " state " + Arrays.toString(dims));
            }
        }
    }

    @Test
    void stateCarriesAcrossSteps() {
        stateCarriesAcrossSteps(new Problem(13, 230, 2, 4, 64, 64));
        stateCarriesAcrossSteps(new Problem(18, 230, 2, 4, 64, 64, 0.001, 0.1));
    }

    void stateCarriesAcrossSteps(Problem p) {
        double[] state = new double[p.hv * p.dk * p.dv];
        double[] want = p.reference(state);
        float[][] oneStepRecurrent = runSteps(Form.RECURRENT, p, 0, p.tokens);
        for (Form form : Form.values()) {
            for (int[] steps : new int[][] {{1}, {7}, {64}, {1, 7, 64}, {100, 1, 129}}) {
                float[][] got = runSteps(form, p, 0, steps);
                String what = form + " in steps of " + Arrays.toString(steps);
                assertClose(want, got[0], TOL, what + ": output");
                assertClose(state, got[1], TOL, what + ": state");
                assertClose(oneStepRecurrent[0], got[0], TOL, what + " vs one recurrent step: output");
                assertClose(oneStepRecurrent[1], got[1], TOL, what + " vs one recurrent step: state");
            }
        }
        // the recurrent form is token by token whatever the steps: bit-identical
        float[][] ones = runSteps(Form.RECURRENT, p, 0, 1);
        assertArrayEquals(oneStepRecurrent[0], ones[0]);
        assertArrayEquals(oneStepRecurrent[1], ones[1]);
    }

    @Test
    void batchedSegmentsGiveExactlyWhatEachGivesAlone() {
        Problem p = new Problem(14, 400, 2, 4, 32, 32);
        int[] history = {0, 9, 70};      // committed tokens before the batched step
        int[] lengths = {1, 90, 5};      // the batched step (one of them chunked under AUTO)
        int[] start = {0, 100, 250};     // where each sequence's data lies in the problem
        for (Form form : Form.values()) {
            CpuKvStore[] alone = new CpuKvStore[3], batched = new CpuKvStore[3];
            float[][] aloneOut = new float[3][];
            for (int s = 0; s < 3; s++) {
                for (int copy = 0; copy < 2; copy++) {
                    CpuKvStore kv = store(p.layout(1));
                    if (history[s] > 0) {
                        kv.begin(history[s]);
                        rule(form, p, start[s], start[s] + history[s], List.of(new Segment(new int[history[s]], 0, kv)), 0);
                        kv.commit();
                    }
                    if (copy == 0) alone[s] = kv;
                    else batched[s] = kv;
                }
                int from = start[s] + history[s];
                alone[s].begin(lengths[s]);
                aloneOut[s] = rule(form, p, from, from + lengths[s], List.of(new Segment(new int[lengths[s]], history[s], alone[s])), 0).data();
                alone[s].commit();
            }
            // the batched rows: each sequence's rows one after another
            int total = Arrays.stream(lengths).sum();
            int qkW = p.hk * p.dk, vW = p.hv * p.dv;
            float[] q = new float[total * qkW], k = new float[total * qkW], v = new float[total * vW], a = new float[total * p.hv], b = new float[total * p.hv];
            List<Segment> segments = new ArrayList<>();
            for (int s = 0, row = 0; s < 3; row += lengths[s], s++) {
                int from = start[s] + history[s];
                System.arraycopy(p.q, from * qkW, q, row * qkW, lengths[s] * qkW);
                System.arraycopy(p.k, from * qkW, k, row * qkW, lengths[s] * qkW);
                System.arraycopy(p.v, from * vW, v, row * vW, lengths[s] * vW);
                System.arraycopy(p.a, from * p.hv, a, row * p.hv, lengths[s] * p.hv);
                System.arraycopy(p.b, from * p.hv, b, row * p.hv, lengths[s] * p.hv);
                batched[s].begin(lengths[s]);
                segments.add(new Segment(new int[lengths[s]], history[s], batched[s]));
            }
            float[] out = rule(form, new CpuActivation(q, total, qkW), new CpuActivation(k, total, qkW), new CpuActivation(v, total, vW),
                    new CpuActivation(a, total, p.hv), new CpuActivation(b, total, p.hv), p, segments, 0).data();
            for (int s = 0, row = 0; s < 3; row += lengths[s], s++) {
                batched[s].commit();
                assertArrayEquals(aloneOut[s], Arrays.copyOfRange(out, row * vW, (row + lengths[s]) * vW), form + ": segment " + s + " output");
                assertArrayEquals(alone[s].recurrent().state(0), batched[s].recurrent().state(0), form + ": segment " + s + " state");
            }
        }
    }

    @Test
    void rollbackLeavesCommittedStateUntouched() {
        Problem p = new Problem(15, 200, 2, 4, 32, 32);
        int channels = 8, taps = 4;
        float[] w = gaussian(new SplittableRandom(3), channels * taps, 0.5);
        float[] x = gaussian(new SplittableRandom(4), p.tokens * channels, 1);
        for (Form form : Form.values()) {
            CpuKvStore kv = store(p.layout(2));
            kv.begin(50);
            List<Segment> first = List.of(new Segment(new int[50], 0, kv));
            rule(form, p, 0, 50, first, 1);
            CpuGatedDeltaNet.causalConv1dSilu(new CpuActivation(Arrays.copyOf(x, 50 * channels), 50, channels), conv(w, channels, taps), first, 1, POOL);
            rule(form, p, 0, 50, first, 0);
            CpuGatedDeltaNet.causalConv1dSilu(new CpuActivation(Arrays.copyOf(x, 50 * channels), 50, channels), conv(w, channels, taps), first, 0, POOL);
            kv.commit();
            float[] state = kv.recurrent().state(1).clone(), window = kv.recurrent().conv(1).clone();
            assertTrue(Arrays.stream(toDouble(state)).anyMatch(d -> d != 0), "the first step wrote a state");

            List<Segment> second = List.of(new Segment(new int[100], 50, kv));
            CpuActivation x2 = new CpuActivation(Arrays.copyOfRange(x, 50 * channels, 150 * channels), 100, channels);
            kv.begin(100);
            float[] firstTry = rule(form, p, 50, 150, second, 1).data();
            float[] firstConv = CpuGatedDeltaNet.causalConv1dSilu(x2, conv(w, channels, taps), second, 1, POOL).data();
            kv.rollback();
            assertArrayEquals(state, kv.recurrent().state(1), form + ": committed state after rollback");
            assertArrayEquals(window, kv.recurrent().conv(1), form + ": committed window after rollback");
            assertEquals(50, kv.length());

            kv.begin(100);
            assertArrayEquals(firstTry, rule(form, p, 50, 150, second, 1).data(), form + ": the step again after rollback");
            assertArrayEquals(firstConv, CpuGatedDeltaNet.causalConv1dSilu(x2, conv(w, channels, taps), second, 1, POOL).data());
            rule(form, p, 50, 150, second, 0);
            CpuGatedDeltaNet.causalConv1dSilu(x2, conv(w, channels, taps), second, 0, POOL);
            kv.commit();
            float[][] whole = runSteps(Form.RECURRENT, prefix(p, 150), 1, 150);
            assertClose(whole[1], kv.recurrent().state(1), TOL, form + ": state after rollback and retry");
        }
    }

    @Test
    void wrongShapesAndStepsAreRefused() {
        Problem p = new Problem(16, 10, 2, 4, 16, 16);
        CpuKvStore kv = store(p.layout(1));
        kv.begin(10);
        List<Segment> seg = List.of(new Segment(new int[10], 0, kv));
        CpuActivation q = p.rows(p.q, 32, 0, 10), k = p.rows(p.k, 32, 0, 10), v = p.rows(p.v, 64, 0, 10), a = p.rows(p.a, 4, 0, 10), b = p.rows(p.b, 4, 0, 10);
        String m;
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, p.rows(p.v, 64, 0, 9), a, b,
                p.aLog, p.dtBias, seg, 0, 2, 4, 16, 16, POOL)).getMessage();
        assertTrue(m.contains("v is 9×64"), m);
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b,
                p.aLog, p.dtBias, seg, 0, 2, 4, 8, 32, POOL)).getMessage();
        assertTrue(m.contains("q is 10×32"), m);
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b,
                new float[3], p.dtBias, seg, 0, 2, 4, 16, 16, POOL)).getMessage();
        assertTrue(m.contains("A_log has 3"), m);
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b,
                p.aLog, p.dtBias, seg, 0, 3, 4, 16, 16, POOL)).getMessage();
        assertTrue(m.contains("cannot share"), m);
        // the layout of the store disagrees with the op's heads
        CpuKvStore other = store(new RecurrentLayout(1, 8, 4, 4, 16, 8));
        other.begin(10);
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b,
                p.aLog, p.dtBias, List.of(new Segment(new int[10], 0, other)), 0, 2, 4, 16, 16, POOL)).getMessage();
        assertTrue(m.contains("keeps 4 heads of 16×8"), m);
        // a segment that is not the open step
        m = assertThrows(IllegalStateException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b,
                p.aLog, p.dtBias, List.of(new Segment(new int[10], 3, kv)), 0, 2, 4, 16, 16, POOL)).getMessage();
        assertTrue(m.contains("open kv step is [0, 10)"), m);
        assertThrows(IndexOutOfBoundsException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b,
                p.aLog, p.dtBias, seg, 1, 2, 4, 16, 16, POOL));
        // a store without recurrent state
        CpuKvStore plain = store(null);
        plain.begin(10);
        assertThrows(IllegalStateException.class, () -> CpuGatedDeltaNet.gatedDeltaRule(q, k, v, a, b,
                p.aLog, p.dtBias, List.of(new Segment(new int[10], 0, plain)), 0, 2, 4, 16, 16, POOL));
        // conv: kernel rows ≠ channels, taps ≠ the layout's kernel, rows ≠ segment rows
        CpuActivation x = new CpuActivation(new float[10 * 8], 10, 8);
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.causalConv1dSilu(x, conv(new float[28], 7, 4), seg, 0, POOL)).getMessage();
        assertTrue(m.contains("7 rows for 8 channels"), m);
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.causalConv1dSilu(x, conv(new float[24], 8, 3), seg, 0, POOL)).getMessage();
        assertTrue(m.contains("kernel 4"), m);
        m = assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.causalConv1dSilu(new CpuActivation(new float[9 * 8], 9, 8),
                conv(new float[32], 8, 4), seg, 0, POOL)).getMessage();
        assertTrue(m.contains("9 rows for 10 segment rows"), m);
        assertThrows(IllegalArgumentException.class, () -> CpuGatedDeltaNet.causalConv1dSilu(x,
                new CpuWeight("v", "F32", 1, 8, null, new float[8]), seg, 0, POOL));
        // nothing was written: the step can commit (no layer written)
        kv.commit();
        assertEquals(10, kv.length());
        assertTrue(Arrays.stream(toDouble(kv.recurrent().state(0))).allMatch(d -> d == 0));
        other.rollback();
        plain.rollback();
    }

    // ------------------------------------------------------------------ causal conv1d

    static CpuWeight conv(float[] w, int channels, int taps) {
        return new CpuWeight("conv1d", "F32", channels, taps, new F32Matrix(MemorySegment.ofArray(w), channels, taps), null);
    }

    /** out[t,c] = silu(Σ_j w[c,j]·xin[t+j,c]) over the whole sequence from a zero window, in float64. */
    static double[] convReference(float[] x, float[] w, int tokens, int channels, int taps) {
        double[] out = new double[tokens * channels];
        for (int t = 0; t < tokens; t++) {
            for (int c = 0; c < channels; c++) {
                double acc = 0;
                for (int j = 0; j < taps; j++) {
                    int src = t + j - (taps - 1);
                    if (src >= 0) acc += (double) w[c * taps + j] * x[src * channels + c];
                }
                out[t * channels + c] = acc / (1 + Math.exp(-acc));
            }
        }
        return out;
    }

    @Test
    void convMatchesFloat64ReferenceWithCarriedWindow() {
        for (int[] shape : new int[][] {{40, 4}, {16, 4}, {7, 2}, {35, 5}, {19, 1}}) {
            int channels = shape[0], taps = shape[1], tokens = 23;
            SplittableRandom r = new SplittableRandom(channels * 31 + taps);
            float[] w = gaussian(r, channels * taps, 0.5), x = gaussian(r, tokens * channels, 1);
            double[] want = convReference(x, w, tokens, channels, taps);
            for (int[] steps : new int[][] {{23}, {1}, {2}, {1, 2, 7, 13}, {3, 20}}) {
                CpuKvStore kv = store(new RecurrentLayout(2, channels, taps, 1, 1, 1));
                float[] got = new float[tokens * channels];
                for (int pos = 0, i = 0; pos < tokens; i++) {
                    int n = Math.min(steps[i % steps.length], tokens - pos);
                    kv.begin(n);
                    List<Segment> seg = List.of(new Segment(new int[n], pos, kv));
                    CpuActivation in = new CpuActivation(Arrays.copyOfRange(x, pos * channels, (pos + n) * channels), n, channels);
                    float[] o = CpuGatedDeltaNet.causalConv1dSilu(in, conv(w, channels, taps), seg, 1, POOL).data();
                    CpuGatedDeltaNet.causalConv1dSilu(in, conv(w, channels, taps), seg, 0, POOL);
                    kv.commit();
                    System.arraycopy(o, 0, got, pos * channels, o.length);
                    pos += n;
                }
                String what = channels + " channels, kernel " + taps + ", steps " + Arrays.toString(steps);
                assertClose(want, got, 1e-6, what);
                // the window: the last K−1 raw rows
                double[] window = new double[(taps - 1) * channels];
                for (int i = 0; i < window.length; i++) window[i] = x[(tokens - (taps - 1)) * channels + i];
                assertClose(window, kv.recurrent().conv(1), 0, what + ": window");
            }
        }
    }

    @Test
    void convBatchedSegmentsGiveExactlyWhatEachGivesAlone() {
        int channels = 72, taps = 4;
        SplittableRandom r = new SplittableRandom(21);
        float[] w = gaussian(r, channels * taps, 0.5);
        int[] history = {0, 1, 30}, lengths = {2, 1, 40};
        float[][] hist = new float[3][], step = new float[3][];
        CpuKvStore[] alone = new CpuKvStore[3], batched = new CpuKvStore[3];
        float[][] aloneOut = new float[3][];
        for (int s = 0; s < 3; s++) {
            hist[s] = gaussian(r, history[s] * channels, 1);
            step[s] = gaussian(r, lengths[s] * channels, 1);
            for (int copy = 0; copy < 2; copy++) {
                CpuKvStore kv = store(new RecurrentLayout(1, channels, taps, 1, 1, 1));
                if (history[s] > 0) {
                    kv.begin(history[s]);
                    CpuGatedDeltaNet.causalConv1dSilu(new CpuActivation(hist[s], history[s], channels), conv(w, channels, taps),
                            List.of(new Segment(new int[history[s]], 0, kv)), 0, POOL);
                    kv.commit();
                }
                if (copy == 0) alone[s] = kv;
                else batched[s] = kv;
            }
            alone[s].begin(lengths[s]);
            aloneOut[s] = CpuGatedDeltaNet.causalConv1dSilu(new CpuActivation(step[s], lengths[s], channels), conv(w, channels, taps),
                    List.of(new Segment(new int[lengths[s]], history[s], alone[s])), 0, POOL).data();
            alone[s].commit();
        }
        int total = Arrays.stream(lengths).sum();
        float[] x = new float[total * channels];
        List<Segment> segments = new ArrayList<>();
        for (int s = 0, row = 0; s < 3; row += lengths[s], s++) {
            System.arraycopy(step[s], 0, x, row * channels, step[s].length);
            batched[s].begin(lengths[s]);
            segments.add(new Segment(new int[lengths[s]], history[s], batched[s]));
        }
        float[] out = CpuGatedDeltaNet.causalConv1dSilu(new CpuActivation(x, total, channels), conv(w, channels, taps), segments, 0, POOL).data();
        for (int s = 0, row = 0; s < 3; row += lengths[s], s++) {
            batched[s].commit();
            assertArrayEquals(aloneOut[s], Arrays.copyOfRange(out, row * channels, (row + lengths[s]) * channels), "segment " + s);
            assertArrayEquals(alone[s].recurrent().conv(0), batched[s].recurrent().conv(0), "segment " + s + " window");
        }
    }

    // ------------------------------------------------------------------ helpers

    static Problem prefix(Problem p, int len) {
        Problem out = new Problem(0, len, p.hk, p.hv, p.dk, p.dv);   // its random data replaced by p's
        System.arraycopy(p.q, 0, out.q, 0, out.q.length);
        System.arraycopy(p.k, 0, out.k, 0, out.k.length);
        System.arraycopy(p.v, 0, out.v, 0, out.v.length);
        System.arraycopy(p.a, 0, out.a, 0, out.a.length);
        System.arraycopy(p.b, 0, out.b, 0, out.b.length);
        System.arraycopy(p.aLog, 0, out.aLog, 0, out.aLog.length);
        System.arraycopy(p.dtBias, 0, out.dtBias, 0, out.dtBias.length);
        return out;
    }

    static double[] toDouble(float[] x) {
        double[] d = new double[x.length];
        for (int i = 0; i < x.length; i++) d[i] = x[i];
        return d;
    }
}
