package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.RecurrentLayout;
import dev.forkpoint.backend.Segment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.util.List;

/**
 * The Gated DeltaNet kernels on the CPU: the causal convolution with its carried window and the gated delta rule.
 *
 * <p>Both read each segment's committed recurrent state ({@link CpuRecurrentState#conv}, {@link CpuRecurrentState#state})
 * and write the open step's arrays in full; every check runs before any pending array is touched. The delta rule has
 * two forms that agree to float rounding: token by token ({@link #gatedDeltaRuleRecurrent}) and chunked
 * ({@link #gatedDeltaRuleChunked}, the WY/UT form of flash-linear-attention's chunk_gated_delta_rule: per chunk of
 * {@link #CHUNK} tokens a lower-triangular system gives the corrected values, then one state update). The op takes the
 * chunked form for segments of at least {@link #CHUNKED_FROM} tokens. A segment's result depends only on that segment,
 * so a batch of segments gives exactly what each alone gives.
 */
final class CpuGatedDeltaNet {
    private CpuGatedDeltaNet() {}

    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final int L = KernelSupport.L;

    /** Tokens per chunk of the chunked form. */
    static final int CHUNK = 64;

    /**
     * Segments of at least this many tokens take the chunked form (property {@code forkpoint.gdn.chunkedFrom}, for
     * measuring one form against the other). The default is where the chunked form got faster in GatedDeltaNetBench
     * (16 key / 32 value heads of 128, one thread, AVX-512): recurrent 0.78 ms vs chunked 1.13 ms at 8 tokens,
     * 1.47 vs 1.03 ms at 16, 44 vs 33 ms at 512.
     */
    static final int CHUNKED_FROM = Integer.getInteger("forkpoint.gdn.chunkedFrom", 16);

    private enum Form { AUTO, RECURRENT, CHUNKED }

    // ---------------------------------------------------------------- causal conv1d + SiLU

    static CpuActivation causalConv1dSilu(CpuActivation x, CpuWeight kernel, List<Segment> segments, int layer, WorkerPool pool) {
        if (kernel.matrix() == null) {
            throw new IllegalArgumentException("causal conv1d: kernel " + kernel.name() + " is a vector, a channels × K matrix was expected");
        }
        int channels = x.width(), taps = kernel.cols();
        if (kernel.rows() != channels) {
            throw new IllegalArgumentException("causal conv1d: kernel " + kernel.name() + " has " + kernel.rows() + " rows for "
                    + channels + " channels");
        }
        checkRows(x, segments, "causal conv1d", "x");
        CpuRecurrentState[] states = states(segments, layer, "causal conv1d");
        for (CpuRecurrentState st : states) {
            RecurrentLayout lay = st.layout();
            if (lay.convChannels() != channels || lay.convKernel() != taps) {
                throw new IllegalArgumentException("causal conv1d of " + channels + " channels with kernel " + taps
                        + ", but the recurrent state keeps windows of " + lay.convChannels() + " channels for kernel " + lay.convKernel());
            }
        }
        // taps transposed to K × C, so that channels are contiguous for the vector loop
        float[] wt = new float[taps * channels];
        float[] row = new float[taps];
        for (int c = 0; c < channels; c++) {
            kernel.matrix().dequantizeRow(c, row, 0);
            for (int j = 0; j < taps; j++) wt[j * channels + c] = row[j];
        }
        int n = segments.size();
        float[][] windows = new float[n][], next = new float[n][];
        int[] rowStart = new int[n + 1];
        for (int s = 0; s < n; s++) {
            windows[s] = states[s].conv(layer);
            next[s] = states[s].pendingConv(layer);
            rowStart[s + 1] = rowStart[s] + segments.get(s).tokens().length;
        }
        float[] src = x.data();
        float[] out = new float[src.length];
        pool.runRanges(channels, KernelSupport.parts(pool), L, (from, to) -> {
            for (int s = 0; s < n; s++) {
                convRange(src, rowStart[s], rowStart[s + 1] - rowStart[s], windows[s], next[s], wt, taps, channels, out, from, to);
            }
        });
        return new CpuActivation(out, x.tokens(), channels);
    }

    /** One segment's channels [from, to): xin row r is window row r for r &lt; K−1, else x row start + r − (K−1). */
    private static void convRange(float[] x, int start, int len, float[] window, float[] next, float[] wt, int taps, int ch,
                                  float[] out, int from, int to) {
        int hist = taps - 1;
        for (int t = 0; t < len; t++) {
            int o = (start + t) * ch;
            int c = from;
            for (; c + L <= to; c += L) {
                FloatVector acc = FloatVector.zero(F);
                for (int j = 0; j < taps; j++) {
                    int r = t + j;
                    FloatVector in = r < hist ? FloatVector.fromArray(F, window, r * ch + c)
                            : FloatVector.fromArray(F, x, (start + r - hist) * ch + c);
                    acc = FloatVector.fromArray(F, wt, j * ch + c).fma(in, acc);
                }
                acc.intoArray(out, o + c);
            }
            for (; c < to; c++) {
                float acc = 0;
                for (int j = 0; j < taps; j++) {
                    int r = t + j;
                    float in = r < hist ? window[r * ch + c] : x[(start + r - hist) * ch + c];
                    acc = Math.fma(wt[j * ch + c], in, acc);
                }
                out[o + c] = acc;
            }
            for (c = from; c < to; c++) {
                float v = out[o + c];
                out[o + c] = v / (1 + (float) Math.exp(-v));
            }
        }
        // the new window: xin rows len … len+K−2 (raw)
        for (int r = 0; r < hist; r++) {
            int idx = len + r;
            if (idx < hist) System.arraycopy(window, idx * ch + from, next, r * ch + from, to - from);
            else System.arraycopy(x, (start + idx - hist) * ch + from, next, r * ch + from, to - from);
        }
    }

    // ---------------------------------------------------------------- gated delta rule

    static CpuActivation gatedDeltaRule(CpuActivation q, CpuActivation k, CpuActivation v, CpuActivation a, CpuActivation b,
                                        float[] aLog, float[] dtBias, List<Segment> segments, int layer, int keyHeads,
                                        int valueHeads, int keyDim, int valueDim, WorkerPool pool) {
        return deltaRule(q, k, v, a, b, aLog, dtBias, segments, layer, keyHeads, valueHeads, keyDim, valueDim, pool, Form.AUTO);
    }

    /** The op in the token-by-token form for every segment. */
    static CpuActivation gatedDeltaRuleRecurrent(CpuActivation q, CpuActivation k, CpuActivation v, CpuActivation a, CpuActivation b,
                                                 float[] aLog, float[] dtBias, List<Segment> segments, int layer, int keyHeads,
                                                 int valueHeads, int keyDim, int valueDim, WorkerPool pool) {
        return deltaRule(q, k, v, a, b, aLog, dtBias, segments, layer, keyHeads, valueHeads, keyDim, valueDim, pool, Form.RECURRENT);
    }

    /** The op in the chunked form for every segment (whatever its length). */
    static CpuActivation gatedDeltaRuleChunked(CpuActivation q, CpuActivation k, CpuActivation v, CpuActivation a, CpuActivation b,
                                               float[] aLog, float[] dtBias, List<Segment> segments, int layer, int keyHeads,
                                               int valueHeads, int keyDim, int valueDim, WorkerPool pool) {
        return deltaRule(q, k, v, a, b, aLog, dtBias, segments, layer, keyHeads, valueHeads, keyDim, valueDim, pool, Form.CHUNKED);
    }

    /**
     * Log decays below this are flushed to 0 (e^−30 ≈ 1e−13, far under the float noise of any result). It keeps the
     * products of decayed terms out of the subnormal range, where x86 arithmetic is ~100× slower: a chunk's cumulative
     * decay easily reaches e^−100, and a product of two factors just above the threshold stays above e^−60.
     */
    static final double FLUSH = -30;

    /** e^x for a log decay x ≤ 0, flushed to 0 below {@link #FLUSH}. */
    static float decay(double x) {
        return x < FLUSH ? 0f : (float) Math.exp(x);
    }

    /** softplus(x) = log(1 + eˣ), without overflow for large x. */
    static double softplus(double x) {
        return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
    }

    private static CpuActivation deltaRule(CpuActivation q, CpuActivation k, CpuActivation v, CpuActivation a, CpuActivation b,
                                           float[] aLog, float[] dtBias, List<Segment> segments, int layer, int keyHeads,
                                           int valueHeads, int keyDim, int valueDim, WorkerPool pool, Form form) {
        if (keyHeads < 1 || valueHeads < 1 || keyDim < 1 || valueDim < 1 || valueHeads % keyHeads != 0) {
            throw new IllegalArgumentException("gated delta rule: " + valueHeads + " value heads cannot share " + keyHeads
                    + " key heads (dims " + keyDim + "/" + valueDim + ")");
        }
        int tokens = Segment.rows(segments);
        int qkW = keyHeads * keyDim, vW = valueHeads * valueDim;
        checkShape(q, tokens, qkW, "q");
        checkShape(k, tokens, qkW, "k");
        checkShape(v, tokens, vW, "v");
        checkShape(a, tokens, valueHeads, "a");
        checkShape(b, tokens, valueHeads, "b");
        if (aLog.length != valueHeads || dtBias.length != valueHeads) {
            throw new IllegalArgumentException("gated delta rule: A_log has " + aLog.length + " and dt_bias " + dtBias.length
                    + " values for " + valueHeads + " value heads");
        }
        CpuRecurrentState[] states = states(segments, layer, "gated delta rule");
        for (CpuRecurrentState st : states) {
            RecurrentLayout lay = st.layout();
            if (lay.valueHeads() != valueHeads || lay.keyDim() != keyDim || lay.valueDim() != valueDim) {
                throw new IllegalArgumentException("gated delta rule over " + valueHeads + " heads of " + keyDim + "×" + valueDim
                        + ", but the recurrent state keeps " + lay.valueHeads() + " heads of " + lay.keyDim() + "×" + lay.valueDim());
            }
        }
        // gates: log decay g (double, for the chunked form's cumulative sums) and β, per row and value head
        double[] g = new double[tokens * valueHeads];
        float[] beta = new float[tokens * valueHeads];
        float[] ad = a.data(), bd = b.data();
        for (int t = 0; t < tokens; t++) {
            for (int h = 0; h < valueHeads; h++) {
                int i = t * valueHeads + h;
                g[i] = -Math.exp(aLog[h]) * softplus((double) ad[i] + dtBias[h]);
                beta[i] = (float) (1 / (1 + Math.exp(-(double) bd[i])));
            }
        }
        int n = segments.size();
        float[][] committed = new float[n][], pending = new float[n][];
        int[] rowStart = new int[n + 1];
        for (int s = 0; s < n; s++) {
            committed[s] = states[s].state(layer);
            pending[s] = states[s].pendingState(layer);
            rowStart[s + 1] = rowStart[s] + segments.get(s).tokens().length;
        }
        float[] out = new float[tokens * vW];
        int group = valueHeads / keyHeads;
        Dims d = new Dims(qkW, vW, valueHeads, keyDim, valueDim);
        pool.runRanges(n * valueHeads, KernelSupport.parts(pool), (from, to) -> {
            Scratch scratch = null;
            float[] vec = new float[2 * valueDim];
            for (int p = from; p < to; p++) {
                int s = p / valueHeads, h = p % valueHeads;
                int len = rowStart[s + 1] - rowStart[s];
                boolean chunked = form == Form.CHUNKED || (form == Form.AUTO && len >= CHUNKED_FROM);
                int kOff = (h / group) * keyDim;
                if (chunked) {
                    if (scratch == null) scratch = new Scratch(keyDim, valueDim);
                    chunkedHead(q.data(), k.data(), v.data(), g, beta, d, h, kOff, rowStart[s], len, committed[s], pending[s], out, scratch);
                } else {
                    recurrentHead(q.data(), k.data(), v.data(), g, beta, d, h, kOff, rowStart[s], len, committed[s], pending[s], out, vec);
                }
            }
        });
        return new CpuActivation(out, tokens, vW);
    }

    private record Dims(int qkW, int vW, int heads, int dk, int dv) {}

    /**
     * Value head h of one segment (rows row0 … row0+len−1), token by token: S ← S·e^g; kv = Sᵀk; δ = (v − kv)·β;
     * S ← S + kδᵀ; o = Sᵀq. Reads the state from {@code s0}, writes it to {@code s1} (the first token reads s0,
     * the rest update s1 in place).
     */
    private static void recurrentHead(float[] q, float[] k, float[] v, double[] g, float[] beta, Dims d, int h, int kOff,
                                      int row0, int len, float[] s0, float[] s1, float[] out, float[] vec) {
        int dk = d.dk, dv = d.dv;
        int sOff = h * dk * dv;
        float[] kv = vec;   // [0, dv): Sᵀk, then δ
        for (int t = 0; t < len; t++) {
            int row = row0 + t;
            float[] src = t == 0 ? s0 : s1;
            float eg = decay(g[row * d.heads + h]);
            float bt = beta[row * d.heads + h];
            int kRow = row * d.qkW + kOff, vRow = row * d.vW + h * dv;
            transposedTimes(src, sOff, dk, dv, k, kRow, kv);
            for (int j = 0; j < dv; j++) kv[j] = (v[vRow + j] - eg * kv[j]) * bt;
            decayUpdateOut(src, s1, sOff, dk, dv, eg, k, kRow, kv, q, kRow, out, vRow);
        }
    }

    /** y[j] = Σ_i S[i][j]·x[i] for the dk × dv matrix S at sOff. */
    private static void transposedTimes(float[] s, int sOff, int dk, int dv, float[] x, int xOff, float[] y) {
        int j = 0;
        for (; j + 4 * L <= dv; j += 4 * L) {
            FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0, r = sOff + j; i < dk; i++, r += dv) {
                FloatVector xi = FloatVector.broadcast(F, x[xOff + i]);
                a0 = FloatVector.fromArray(F, s, r).fma(xi, a0);
                a1 = FloatVector.fromArray(F, s, r + L).fma(xi, a1);
                a2 = FloatVector.fromArray(F, s, r + 2 * L).fma(xi, a2);
                a3 = FloatVector.fromArray(F, s, r + 3 * L).fma(xi, a3);
            }
            a0.intoArray(y, j);
            a1.intoArray(y, j + L);
            a2.intoArray(y, j + 2 * L);
            a3.intoArray(y, j + 3 * L);
        }
        for (; j + L <= dv; j += L) {
            FloatVector a0 = FloatVector.zero(F);
            for (int i = 0, r = sOff + j; i < dk; i++, r += dv) a0 = FloatVector.fromArray(F, s, r).fma(FloatVector.broadcast(F, x[xOff + i]), a0);
            a0.intoArray(y, j);
        }
        for (; j < dv; j++) {
            float acc = 0;
            for (int i = 0, r = sOff + j; i < dk; i++, r += dv) acc = Math.fma(s[r], x[xOff + i], acc);
            y[j] = acc;
        }
    }

    /** dst[i][j] = src[i][j]·e + k[i]·δ[j]; out[j] = Σ_i dst[i][j]·q[i]. */
    private static void decayUpdateOut(float[] src, float[] dst, int sOff, int dk, int dv, float e, float[] k, int kOff,
                                       float[] delta, float[] q, int qOff, float[] out, int oOff) {
        int j = 0;
        for (; j + 4 * L <= dv; j += 4 * L) {
            FloatVector d0 = FloatVector.fromArray(F, delta, j), d1 = FloatVector.fromArray(F, delta, j + L);
            FloatVector d2 = FloatVector.fromArray(F, delta, j + 2 * L), d3 = FloatVector.fromArray(F, delta, j + 3 * L);
            FloatVector o0 = FloatVector.zero(F), o1 = o0, o2 = o0, o3 = o0;
            for (int i = 0, r = sOff + j; i < dk; i++, r += dv) {
                FloatVector ki = FloatVector.broadcast(F, k[kOff + i]), qi = FloatVector.broadcast(F, q[qOff + i]);
                FloatVector x0 = d0.fma(ki, FloatVector.fromArray(F, src, r).mul(e));
                FloatVector x1 = d1.fma(ki, FloatVector.fromArray(F, src, r + L).mul(e));
                FloatVector x2 = d2.fma(ki, FloatVector.fromArray(F, src, r + 2 * L).mul(e));
                FloatVector x3 = d3.fma(ki, FloatVector.fromArray(F, src, r + 3 * L).mul(e));
                x0.intoArray(dst, r);
                x1.intoArray(dst, r + L);
                x2.intoArray(dst, r + 2 * L);
                x3.intoArray(dst, r + 3 * L);
                o0 = x0.fma(qi, o0);
                o1 = x1.fma(qi, o1);
                o2 = x2.fma(qi, o2);
                o3 = x3.fma(qi, o3);
            }
            o0.intoArray(out, oOff + j);
            o1.intoArray(out, oOff + j + L);
            o2.intoArray(out, oOff + j + 2 * L);
            o3.intoArray(out, oOff + j + 3 * L);
        }
        for (; j + L <= dv; j += L) {
            FloatVector d0 = FloatVector.fromArray(F, delta, j);
            FloatVector o0 = FloatVector.zero(F);
            for (int i = 0, r = sOff + j; i < dk; i++, r += dv) {
                FloatVector x0 = d0.fma(FloatVector.broadcast(F, k[kOff + i]), FloatVector.fromArray(F, src, r).mul(e));
                x0.intoArray(dst, r);
                o0 = x0.fma(FloatVector.broadcast(F, q[qOff + i]), o0);
            }
            o0.intoArray(out, oOff + j);
        }
        for (; j < dv; j++) {
            float o = 0;
            for (int i = 0, r = sOff + j; i < dk; i++, r += dv) {
                float x = Math.fma(delta[j], k[kOff + i], src[r] * e);
                dst[r] = x;
                o = Math.fma(x, q[qOff + i], o);
            }
            out[oOff + j] = o;
        }
    }

    /** Per-task buffers of the chunked form. */
    private static final class Scratch {
        final float[] qk, kt, dots, p, tInv, r, uw, kdt;
        final double[] gam = new double[CHUNK];
        final float[] coef = new float[CHUNK];

        Scratch(int dk, int dv) {
            qk = new float[2 * CHUNK * dk];
            kt = new float[dk * CHUNK];
            dots = new float[2 * CHUNK * CHUNK];
            p = new float[CHUNK * CHUNK];
            tInv = new float[CHUNK * CHUNK];
            r = new float[CHUNK * (dv + dk)];
            uw = new float[CHUNK * (dv + dk)];
            kdt = new float[dk * CHUNK];
        }
    }

    /**
     * Value head h of one segment in chunks of m ≤ CHUNK tokens. With γ_t = Σ_{s≤t} g_s inside the chunk, S0 the state
     * before it, Γ[t][s] = e^{γ_t−γ_s}: A[t][s] = β_t Γ[t][s] k_t·k_s (s &lt; t), T = (I + A)⁻¹,
     * U = T(βV) − T(β e^γ K) S0 (the corrected values δ), O = e^γ Q S0 + (QKᵀ ⊙ Γ, s ≤ t) U,
     * S ← e^{γ_m} S0 + Σ_s e^{γ_m−γ_s} k_s u_sᵀ.
     */
    private static void chunkedHead(float[] q, float[] k, float[] v, double[] g, float[] beta, Dims d, int h, int kOff,
                                    int row0, int len, float[] s0, float[] s1, float[] out, Scratch w) {
        int dk = d.dk, dv = d.dv, wide = dv + dk;
        int sOff = h * dk * dv;
        float[] state = s0;
        double[] gam = w.gam;
        for (int c0 = 0; c0 < len; c0 += CHUNK) {
            int m = Math.min(CHUNK, len - c0);
            int base = row0 + c0;
            double acc = 0;
            for (int t = 0; t < m; t++) {
                acc += g[(base + t) * d.heads + h];
                gam[t] = acc;
            }
            // q rows [0, m), k rows [m, 2m) of qk; kᵀ (dk × m) in kt; R = [βv | β e^γ k]
            for (int t = 0; t < m; t++) {
                int qkRow = (base + t) * d.qkW + kOff, vRow = (base + t) * d.vW + h * dv;
                System.arraycopy(q, qkRow, w.qk, t * dk, dk);
                System.arraycopy(k, qkRow, w.qk, (m + t) * dk, dk);
                float bt = beta[(base + t) * d.heads + h];
                float bg = bt * decay(gam[t]);
                for (int i = 0; i < dk; i++) {
                    float ki = k[qkRow + i];
                    w.kt[i * m + t] = ki;
                    w.r[t * wide + dv + i] = bg * ki;
                }
                for (int j = 0; j < dv; j++) w.r[t * wide + j] = bt * v[vRow + j];
            }
            // q·k and k·k for s ≤ t
            gemm(m, m, dk, w.qk, 0, dk, w.kt, 0, m, 1f, null, 0, 0, 0f, w.dots, 0, m, false, true);
            gemm(m, m, dk, w.qk, m * dk, dk, w.kt, 0, m, 1f, null, 0, 0, 0f, w.dots, m * m, m, false, true);
            // P = QKᵀ ⊙ Γ (lower, diagonal included); A = β KKᵀ ⊙ Γ (strictly lower) and T = (I + A)⁻¹ row by row
            float[] p = w.p, tInv = w.tInv, dots = w.dots;
            for (int t = 0; t < m; t++) {
                float bt = beta[(base + t) * d.heads + h];
                int rowT = t * m;
                for (int s = 0; s <= t; s++) {
                    float decay = decay(gam[t] - gam[s]);
                    p[rowT + s] = dots[rowT + s] * decay;
                    tInv[rowT + s] = s < t ? -bt * dots[m * m + rowT + s] * decay : 1f;   // −A[t][s] for now
                }
                for (int s = t + 1; s < m; s++) {
                    p[rowT + s] = 0;
                    tInv[rowT + s] = 0;
                }
                // T_t = e_t − Σ_{r<t} A[t][r] T_r, with −A[t][r] held in tInv[t][r] (T_r is zero beyond r)
                float[] coef = w.coef;
                for (int r = 0; r < t; r++) coef[r] = tInv[rowT + r];
                for (int s = 0; s < t; s++) tInv[rowT + s] = 0;
                for (int r = 0; r < t; r++) if (coef[r] != 0) axpy(coef[r], tInv, r * m, tInv, rowT, r + 1);
                // T[t][s] = e^{γ_t−γ_s}·T'[t][s] with T' = (I + βKKᵀ strictly lower)⁻¹: flushed with its decay, like A
                for (int s = 0; s < t && gam[t] - gam[s] < FLUSH; s++) tInv[rowT + s] = 0;
            }
            // rows [0, live) still see S0 (e^γ_t not flushed); for the rest its part is zero, and is not computed (the
            // products of their tiny factors would be subnormal)
            int live = 0;
            while (live < m && gam[live] >= FLUSH) live++;
            // [U' | W] = T·R; U = U' − W·S0
            gemm(m, dv, m, tInv, 0, m, w.r, 0, wide, 1f, null, 0, 0, 0f, w.uw, 0, wide, true, false);
            gemm(live, dk, m, tInv, 0, m, w.r, dv, wide, 1f, null, 0, 0, 0f, w.uw, dv, wide, true, false);
            gemm(live, dv, dk, w.uw, dv, wide, state, sOff, dv, -1f, w.uw, 0, wide, 1f, w.uw, 0, wide, false, false);
            // O = e^γ Q S0 + P U
            for (int t = 0; t < m; t++) {
                float e = decay(gam[t]);
                for (int i = 0; i < dk; i++) w.qk[t * dk + i] *= e;
            }
            int oOff = base * d.vW + h * dv;
            gemm(live, dv, dk, w.qk, 0, dk, state, sOff, dv, 1f, null, 0, 0, 0f, out, oOff, d.vW, false, false);
            for (int t = live; t < m; t++) java.util.Arrays.fill(out, oOff + t * d.vW, oOff + t * d.vW + dv, 0f);
            gemm(m, dv, m, p, 0, m, w.uw, 0, wide, 1f, out, oOff, d.vW, 1f, out, oOff, d.vW, true, false);
            // S ← e^{γ_m} S0 + Kdᵀ U, Kd[s] = e^{γ_m−γ_s} k_s
            double last = gam[m - 1];
            for (int s = 0; s < m; s++) {
                float e = decay(last - gam[s]);
                for (int i = 0; i < dk; i++) w.kdt[i * m + s] = w.kt[i * m + s] * e;
            }
            gemm(dk, dv, m, w.kdt, 0, m, w.uw, 0, wide, 1f, state, sOff, dv, decay(last), s1, sOff, dv, false, false);
            state = s1;
        }
    }

    /** y[yOff + i] += alpha·x[xOff + i] for i &lt; n. */
    private static void axpy(float alpha, float[] x, int xOff, float[] y, int yOff, int n) {
        int i = 0;
        FloatVector va = FloatVector.broadcast(F, alpha);
        for (; i + L <= n; i += L) {
            FloatVector.fromArray(F, x, xOff + i).fma(va, FloatVector.fromArray(F, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) y[yOff + i] = Math.fma(x[xOff + i], alpha, y[yOff + i]);
    }

    /**
     * dst[r][j] = srcScale·src[r][j] + alpha·Σ_{i&lt;kk} a[r][i]·b[i][j] for r &lt; m, j &lt; n (row strides lda, ldb,
     * lds, ldd; src null reads as zeros; src may be dst). {@code lowerA}: a[r][i] = 0 for i &gt; r (those terms are
     * skipped, so the zeros must be there within a block of 4 rows). {@code lowerOut}: only j ≤ r is needed (columns
     * beyond, up to the next vector boundary, may be left unwritten).
     */
    static void gemm(int m, int n, int kk, float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float alpha,
                     float[] src, int srcOff, int lds, float srcScale, float[] dst, int dstOff, int ldd,
                     boolean lowerA, boolean lowerOut) {
        int r = 0;
        for (; r + 4 <= m; r += 4) {
            int kLim = lowerA ? Math.min(kk, r + 4) : kk;
            int nLim = lowerOut ? Math.min(n, ((r + 4 + L - 1) / L) * L) : n;
            int a0 = aOff + r * lda, a1 = a0 + lda, a2 = a1 + lda, a3 = a2 + lda;
            int j = 0;
            for (; j + 2 * L <= nLim; j += 2 * L) {
                FloatVector c00 = FloatVector.zero(F), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
                for (int i = 0, bi = bOff + j; i < kLim; i++, bi += ldb) {
                    FloatVector b0 = FloatVector.fromArray(F, b, bi), b1 = FloatVector.fromArray(F, b, bi + L);
                    FloatVector x = FloatVector.broadcast(F, a[a0 + i]);
                    c00 = b0.fma(x, c00);
                    c01 = b1.fma(x, c01);
                    x = FloatVector.broadcast(F, a[a1 + i]);
                    c10 = b0.fma(x, c10);
                    c11 = b1.fma(x, c11);
                    x = FloatVector.broadcast(F, a[a2 + i]);
                    c20 = b0.fma(x, c20);
                    c21 = b1.fma(x, c21);
                    x = FloatVector.broadcast(F, a[a3 + i]);
                    c30 = b0.fma(x, c30);
                    c31 = b1.fma(x, c31);
                }
                store(c00, alpha, src, srcOff + r * lds + j, srcScale, dst, dstOff + r * ldd + j);
                store(c01, alpha, src, srcOff + r * lds + j + L, srcScale, dst, dstOff + r * ldd + j + L);
                store(c10, alpha, src, srcOff + (r + 1) * lds + j, srcScale, dst, dstOff + (r + 1) * ldd + j);
                store(c11, alpha, src, srcOff + (r + 1) * lds + j + L, srcScale, dst, dstOff + (r + 1) * ldd + j + L);
                store(c20, alpha, src, srcOff + (r + 2) * lds + j, srcScale, dst, dstOff + (r + 2) * ldd + j);
                store(c21, alpha, src, srcOff + (r + 2) * lds + j + L, srcScale, dst, dstOff + (r + 2) * ldd + j + L);
                store(c30, alpha, src, srcOff + (r + 3) * lds + j, srcScale, dst, dstOff + (r + 3) * ldd + j);
                store(c31, alpha, src, srcOff + (r + 3) * lds + j + L, srcScale, dst, dstOff + (r + 3) * ldd + j + L);
            }
            for (; j + L <= nLim; j += L) {
                FloatVector c0 = FloatVector.zero(F), c1 = c0, c2 = c0, c3 = c0;
                for (int i = 0, bi = bOff + j; i < kLim; i++, bi += ldb) {
                    FloatVector b0 = FloatVector.fromArray(F, b, bi);
                    c0 = b0.fma(FloatVector.broadcast(F, a[a0 + i]), c0);
                    c1 = b0.fma(FloatVector.broadcast(F, a[a1 + i]), c1);
                    c2 = b0.fma(FloatVector.broadcast(F, a[a2 + i]), c2);
                    c3 = b0.fma(FloatVector.broadcast(F, a[a3 + i]), c3);
                }
                store(c0, alpha, src, srcOff + r * lds + j, srcScale, dst, dstOff + r * ldd + j);
                store(c1, alpha, src, srcOff + (r + 1) * lds + j, srcScale, dst, dstOff + (r + 1) * ldd + j);
                store(c2, alpha, src, srcOff + (r + 2) * lds + j, srcScale, dst, dstOff + (r + 2) * ldd + j);
                store(c3, alpha, src, srcOff + (r + 3) * lds + j, srcScale, dst, dstOff + (r + 3) * ldd + j);
            }
            for (int rr = r; rr < r + 4; rr++) scalarRow(rr, j, nLim, kLim, a, aOff, lda, b, bOff, ldb, alpha, src, srcOff, lds, srcScale, dst, dstOff, ldd);
        }
        for (; r < m; r++) {
            int kLim = lowerA ? Math.min(kk, r + 1) : kk;
            int nLim = lowerOut ? Math.min(n, ((r + 1 + L - 1) / L) * L) : n;
            int a0 = aOff + r * lda;
            int j = 0;
            for (; j + L <= nLim; j += L) {
                FloatVector c0 = FloatVector.zero(F);
                for (int i = 0, bi = bOff + j; i < kLim; i++, bi += ldb) {
                    c0 = FloatVector.fromArray(F, b, bi).fma(FloatVector.broadcast(F, a[a0 + i]), c0);
                }
                store(c0, alpha, src, srcOff + r * lds + j, srcScale, dst, dstOff + r * ldd + j);
            }
            scalarRow(r, j, nLim, kLim, a, aOff, lda, b, bOff, ldb, alpha, src, srcOff, lds, srcScale, dst, dstOff, ldd);
        }
    }

    private static void scalarRow(int r, int from, int to, int kLim, float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
                                  float alpha, float[] src, int srcOff, int lds, float srcScale, float[] dst, int dstOff, int ldd) {
        for (int j = from; j < to; j++) {
            float acc = 0;
            for (int i = 0; i < kLim; i++) acc = Math.fma(a[aOff + r * lda + i], b[bOff + i * ldb + j], acc);
            float base = src == null ? 0f : srcScale * src[srcOff + r * lds + j];
            dst[dstOff + r * ldd + j] = Math.fma(alpha, acc, base);
        }
    }

    private static void store(FloatVector acc, float alpha, float[] src, int srcAt, float srcScale, float[] dst, int dstAt) {
        FloatVector base = src == null ? FloatVector.zero(F) : FloatVector.fromArray(F, src, srcAt).mul(srcScale);
        acc.fma(FloatVector.broadcast(F, alpha), base).intoArray(dst, dstAt);
    }

    // ---------------------------------------------------------------- checks

    private static void checkShape(CpuActivation x, int tokens, int width, String what) {
        if (x.tokens() != tokens || x.width() != width) {
            throw new IllegalArgumentException("gated delta rule: " + what + " is " + x.tokens() + "×" + x.width() + ", "
                    + tokens + "×" + width + " expected");
        }
    }

    private static void checkRows(CpuActivation x, List<Segment> segments, String op, String what) {
        int rows = Segment.rows(segments);
        if (x.tokens() != rows) throw new IllegalArgumentException(op + ": " + what + " has " + x.tokens() + " rows for " + rows + " segment rows");
    }

    /** Each segment's recurrent state, checked: a CPU store whose open step is exactly the segment's positions. */
    private static CpuRecurrentState[] states(List<Segment> segments, int layer, String op) {
        if (segments.isEmpty()) throw new IllegalArgumentException(op + ": no segments");
        CpuRecurrentState[] out = new CpuRecurrentState[segments.size()];
        for (int s = 0; s < out.length; s++) {
            Segment seg = segments.get(s);
            if (!(seg.kv() instanceof CpuKvStore store)) {
                throw new IllegalArgumentException(op + ": the cpu kernels need a cpu kv store, got " + seg.kv().getClass().getName());
            }
            CpuRecurrentState st = store.recurrent();
            if (layer < 0 || layer >= st.layout().layers()) {
                throw new IndexOutOfBoundsException(op + ": linear layer " + layer + " outside [0, " + st.layout().layers() + ")");
            }
            seg.requireOpenStep(op);
            out[s] = st;
        }
        return out;
    }
}
