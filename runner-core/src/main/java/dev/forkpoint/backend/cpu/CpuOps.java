package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.Weight;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/** The ops on the CPU: eager, float32 activations, parallel over rows, tokens or heads with the worker pool. */
final class CpuOps implements Ops {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private final WorkerPool pool;

    CpuOps(WorkerPool pool) {
        this.pool = pool;
    }

    private static CpuActivation cpu(Activation a) { return (CpuActivation) a; }
    private static CpuWeight cpu(Weight w) { return (CpuWeight) w; }

    public Activation embed(Weight table, int[] tokens) {
        CpuWeight t = cpu(table);
        CpuActivation out = CpuActivation.zeros(tokens.length, t.cols());
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] < 0 || tokens[i] >= t.rows()) {
                throw new IllegalArgumentException("token id " + tokens[i] + " outside the vocabulary of " + t.rows());
            }
            t.matrix().dequantizeRow(tokens[i], out.data(), i * t.cols());
        }
        return out;
    }

    public Activation rmsNorm(Activation x, Weight gamma, float eps) {
        return rmsNormHeads(x, gamma, x.width(), eps);
    }

    public Activation rmsNormHeads(Activation x, Weight gamma, int headDim, float eps) {
        CpuActivation in = cpu(x);
        float[] g = cpu(gamma).requireVector();
        if (g.length != headDim || in.width() % headDim != 0) {
            throw new IllegalArgumentException(gamma.name() + " has " + g.length + " values for groups of " + headDim + " in width " + in.width());
        }
        float[] src = in.data();
        float[] dst = new float[src.length];
        int groups = src.length / headDim;
        forRows(groups, in.tokens(), (from, to) -> {
            for (int r = from; r < to; r++) normalize(src, dst, r * headDim, headDim, g, eps);
        });
        return new CpuActivation(dst, in.tokens(), in.width());
    }

    private static void normalize(float[] src, float[] dst, int off, int n, float[] g, float eps) {
        FloatVector acc = FloatVector.zero(S);
        int i = 0;
        for (int bound = S.loopBound(n); i < bound; i += S.length()) {
            FloatVector v = FloatVector.fromArray(S, src, off + i);
            acc = v.fma(v, acc);
        }
        double ss = acc.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) ss += src[off + i] * src[off + i];
        float scale = (float) (1.0 / Math.sqrt(ss / n + eps));
        for (i = 0; i < n; i++) dst[off + i] = src[off + i] * scale * g[i];
    }

    public Activation matmul(Activation x, Weight w) {
        CpuActivation in = cpu(x);
        CpuWeight weight = cpu(w);
        if (weight.matrix() == null) throw new IllegalArgumentException(w.name() + " is not a matrix");
        if (in.width() != weight.cols()) {
            throw new IllegalArgumentException(w.name() + " takes " + weight.cols() + " inputs, the activation has " + in.width());
        }
        float[] out = new float[in.tokens() * weight.rows()];
        weight.matrix().multiply(in.data(), in.tokens(), out, pool);
        return new CpuActivation(out, in.tokens(), weight.rows());
    }

    public Activation addBias(Activation x, Weight bias) {
        CpuActivation in = cpu(x);
        float[] b = cpu(bias).requireVector();
        if (b.length != in.width()) throw new IllegalArgumentException(bias.name() + " has " + b.length + " values for width " + in.width());
        float[] out = in.data().clone();
        for (int t = 0; t < in.tokens(); t++) {
            int off = t * b.length;
            for (int i = 0; i < b.length; i++) out[off + i] += b[i];
        }
        return new CpuActivation(out, in.tokens(), in.width());
    }

    public Activation rope(Activation x, int headDim, int[] positions, Rope rope) {
        CpuActivation in = cpu(x);
        if (positions.length != in.tokens()) throw new IllegalArgumentException(positions.length + " positions for " + in.tokens() + " tokens");
        int heads = in.width() / headDim;
        int half = rope.dims() / 2;
        double[] inv = rope.inverseFrequencies();
        float[] out = in.data().clone();
        float[] cos = new float[half];
        float[] sin = new float[half];
        for (int t = 0; t < in.tokens(); t++) {
            for (int i = 0; i < half; i++) {
                double angle = positions[t] * inv[i];
                cos[i] = (float) Math.cos(angle);
                sin[i] = (float) Math.sin(angle);
            }
            for (int h = 0; h < heads; h++) {
                int base = t * in.width() + h * headDim;
                for (int i = 0; i < half; i++) {
                    int a = rope.neox() ? base + i : base + 2 * i;
                    int b = rope.neox() ? base + i + half : base + 2 * i + 1;
                    float x0 = out[a], x1 = out[b];
                    out[a] = x0 * cos[i] - x1 * sin[i];
                    out[b] = x0 * sin[i] + x1 * cos[i];
                }
            }
        }
        return new CpuActivation(out, in.tokens(), in.width());
    }

    public Activation attention(Activation q, Activation k, Activation v, KvStore kv, int layer, int startPos,
                                int heads, int kvHeads, int headDim) {
        CpuActivation qa = cpu(q), ka = cpu(k), va = cpu(v);
        CpuKvStore store = (CpuKvStore) kv;
        int tokens = qa.tokens();
        int kvDim = kvHeads * headDim;
        if (qa.width() != heads * headDim || ka.width() != kvDim || va.width() != kvDim || store.kvDim() != kvDim) {
            throw new IllegalArgumentException("attention shapes disagree: q " + qa.width() + ", k " + ka.width() + ", v " + va.width()
                    + ", store " + store.kvDim() + " for " + heads + "/" + kvHeads + " heads of " + headDim);
        }
        if (startPos < 0 || startPos + tokens > store.capacity()) {
            throw new IndexOutOfBoundsException("positions " + startPos + "…" + (startPos + tokens - 1) + " exceed the kv capacity " + store.capacity());
        }
        for (int t = 0; t < tokens; t++) store.write(layer, startPos + t, ka.data(), t * kvDim, va.data(), t * kvDim);
        float[] out = new float[tokens * heads * headDim];
        int group = heads / kvHeads;
        float scale = (float) (1.0 / Math.sqrt(headDim));
        pool.runRanges(tokens * heads, pool.threads() * 4, (from, to) -> {
            float[] scores = new float[startPos + tokens];
            for (int task = from; task < to; task++) {
                int t = task / heads, h = task % heads;
                attendOne(qa.data(), (t * heads + h) * headDim, store, layer, (h / group) * headDim, startPos + t + 1,
                        headDim, scale, scores, out, (t * heads + h) * headDim);
            }
        });
        return new CpuActivation(out, tokens, heads * headDim);
    }

    /** Softmax(q·Kᵀ·scale) · V over positions [0, len) for one query head. */
    private static void attendOne(float[] q, int qOff, CpuKvStore store, int layer, int headOff, int len, int headDim,
                                  float scale, float[] scores, float[] out, int outOff) {
        int kvDim = store.kvDim();
        float max = Float.NEGATIVE_INFINITY;
        for (int p = 0; p < len; p++) {
            float[] page = store.keyPage(layer, p / CpuKvStore.PAGE_TOKENS);
            float s = dot(q, qOff, page, (p % CpuKvStore.PAGE_TOKENS) * kvDim + headOff, headDim) * scale;
            scores[p] = s;
            if (s > max) max = s;
        }
        float sum = 0;
        for (int p = 0; p < len; p++) {
            float e = (float) Math.exp(scores[p] - max);
            scores[p] = e;
            sum += e;
        }
        float inv = 1 / sum;
        for (int p = 0; p < len; p++) {
            float[] page = store.valuePage(layer, p / CpuKvStore.PAGE_TOKENS);
            axpy(scores[p] * inv, page, (p % CpuKvStore.PAGE_TOKENS) * kvDim + headOff, out, outOff, headDim);
        }
    }

    private static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        int i = 0;
        FloatVector acc = FloatVector.zero(S);
        for (int bound = S.loopBound(n); i < bound; i += S.length()) {
            acc = FloatVector.fromArray(S, a, aOff + i).fma(FloatVector.fromArray(S, b, bOff + i), acc);
        }
        float s = acc.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) s += a[aOff + i] * b[bOff + i];
        return s;
    }

    private static void axpy(float alpha, float[] x, int xOff, float[] y, int yOff, int n) {
        int i = 0;
        FloatVector a = FloatVector.broadcast(S, alpha);
        for (int bound = S.loopBound(n); i < bound; i += S.length()) {
            FloatVector.fromArray(S, x, xOff + i).fma(a, FloatVector.fromArray(S, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) y[yOff + i] += alpha * x[xOff + i];
    }

    public Activation swiglu(Activation gate, Activation up) {
        CpuActivation g = cpu(gate), u = cpu(up);
        sameShape(g, u, "swiglu");
        float[] out = new float[g.data().length];
        forRows(g.tokens(), g.tokens(), (from, to) -> {
            for (int i = from * g.width(); i < to * g.width(); i++) {
                float x = g.data()[i];
                out[i] = x / (1 + (float) Math.exp(-x)) * u.data()[i];
            }
        });
        return new CpuActivation(out, g.tokens(), g.width());
    }

    public Activation add(Activation a, Activation b) {
        CpuActivation x = cpu(a), y = cpu(b);
        sameShape(x, y, "add");
        float[] out = new float[x.data().length];
        for (int i = 0; i < out.length; i++) out[i] = x.data()[i] + y.data()[i];
        return new CpuActivation(out, x.tokens(), x.width());
    }

    public Activation row(Activation x, int row) {
        CpuActivation in = cpu(x);
        if (row < 0 || row >= in.tokens()) throw new IndexOutOfBoundsException("row " + row + " of " + in.tokens());
        float[] out = new float[in.width()];
        System.arraycopy(in.data(), row * in.width(), out, 0, in.width());
        return new CpuActivation(out, 1, in.width());
    }

    public float[][] logits(Activation x, Weight output) {
        CpuActivation l = cpu(matmul(x, output));
        float[][] rows = new float[l.tokens()][];
        for (int t = 0; t < rows.length; t++) {
            rows[t] = new float[l.width()];
            System.arraycopy(l.data(), t * l.width(), rows[t], 0, l.width());
        }
        return rows;
    }

    private static void sameShape(CpuActivation a, CpuActivation b, String op) {
        if (a.tokens() != b.tokens() || a.width() != b.width()) {
            throw new IllegalArgumentException(op + " of " + a.tokens() + "×" + a.width() + " and " + b.tokens() + "×" + b.width());
        }
    }

    /** Runs body over [0, n) in parallel when there are several tokens; one token's worth is too small to split. */
    private void forRows(int n, int tokens, WorkerPool.RangeTask body) {
        if (tokens <= 1) body.run(0, n);
        else pool.runRanges(n, pool.threads(), body);
    }
}
