package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;

/** The ops on the CPU: eager, float32 activations, parallel over rows, tokens or heads with the worker pool. */
final class CpuOps implements Ops {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();
    /** Elements of a row-wise op (a norm's) worth a dispatch to the pool: 32 rows of 2,048; four decode rows run inline. */
    private static final long PARALLEL_ELEMENTS = 1 << 16;
    /** swiglu's weight per element against a norm's (an exponential each): four decode rows of 8,192 are worth a dispatch. */
    private static final int SWIGLU_WEIGHT = 8;

    private final WorkerPool pool;
    private final StepBuffers buffers;
    private final NativeKernels kernels;   // null: attention in Java

    /** Ops whose outputs are always new arrays (no step reuses them). */
    CpuOps(WorkerPool pool) {
        this(pool, new StepBuffers(0), null);
    }

    /**
     * Ops whose outputs come from {@code buffers} inside a step, and whose attention runs on the native kernel when
     * {@code kernels} is not null.
     */
    CpuOps(WorkerPool pool, StepBuffers buffers, NativeKernels kernels) {
        this.pool = pool;
        this.buffers = buffers;
        this.kernels = kernels;
    }

    private static CpuActivation cpu(Activation a) { return (CpuActivation) a; }
    private static CpuWeight cpu(Weight w) { return (CpuWeight) w; }

    public Activation embed(Weight table, int[] tokens) {
        CpuWeight t = cpu(table);
        CpuActivation out = new CpuActivation(buffers.floats(tokens.length * t.cols()), tokens.length, t.cols());
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
        float[] dst = buffers.floats(src.length);
        int groups = src.length / headDim;
        forRows(groups, in.tokens(), (long) in.tokens() * in.width(), (from, to) -> {
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
        double ss = inLaneOrder(acc);
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
        float[] out = buffers.floats(in.tokens() * weight.rows());
        weight.matrix().multiply(in.data(), in.tokens(), out, pool);
        return new CpuActivation(out, in.tokens(), weight.rows());
    }

    public Activation addBias(Activation x, Weight bias) {
        CpuActivation in = cpu(x);
        float[] b = cpu(bias).requireVector();
        if (b.length != in.width()) throw new IllegalArgumentException(bias.name() + " has " + b.length + " values for width " + in.width());
        float[] out = copy(in.data());
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
        float[] out = copy(in.data());
        float[] cos = buffers.floats(half);
        float[] sin = buffers.floats(half);
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

    public Activation attention(Activation q, Activation k, Activation v, List<Segment> segments, int layer,
                                int heads, int kvHeads, int headDim) {
        CpuActivation qa = cpu(q), ka = cpu(k), va = cpu(v);
        int tokens = qa.tokens();
        int kvDim = kvHeads * headDim;
        if (qa.width() != heads * headDim || ka.width() != kvDim || va.width() != kvDim
                || ka.tokens() != tokens || va.tokens() != tokens || Segment.rows(segments) != tokens) {
            throw new IllegalArgumentException("attention shapes disagree: q " + qa.tokens() + "×" + qa.width() + ", k " + ka.tokens() + "×" + ka.width()
                    + ", v " + va.tokens() + "×" + va.width() + " for " + Segment.rows(segments) + " segment rows of "
                    + heads + "/" + kvHeads + " heads of " + headDim);
        }
        int n = segments.size();
        CpuKvStore[] stores = new CpuKvStore[n];
        for (int s = 0; s < n; s++) stores[s] = checkedStore(segments.get(s), layer, kvDim);
        // every segment's K/V first (a failing check above leaves every store untouched), then the reads
        int[] segmentOf = new int[tokens], positionOf = new int[tokens];
        for (int s = 0, row = 0; s < n; s++) {
            Segment seg = segments.get(s);
            for (int i = 0; i < seg.tokens().length; i++, row++) {
                stores[s].write(layer, seg.startPos() + i, ka.data(), row * kvDim, va.data(), row * kvDim);
                segmentOf[row] = s;
                positionOf[row] = seg.startPos() + i;
            }
        }
        CpuAttention.Keys[] perSegment = new CpuAttention.Keys[n];
        for (int s = 0; s < n; s++) {
            Segment seg = segments.get(s);
            int pages = (seg.startPos() + seg.tokens().length + stores[s].pageTokens() - 1) / stores[s].pageTokens();
            perSegment[s] = new CpuAttention.Keys(stores[s].slabs(layer, KvKind.KEY, pages), stores[s].slabs(layer, KvKind.VALUE, pages),
                    stores[s].pageTokens(), stores[s].elementType());
        }
        CpuAttention.Keys[] rows = new CpuAttention.Keys[tokens];
        int[] length = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            rows[t] = perSegment[segmentOf[t]];
            length[t] = positionOf[t] + 1;
        }
        float[] out = buffers.floats(tokens * heads * headDim);
        new CpuAttention(heads, kvHeads, headDim, kernels).attend(qa.data(), rows, length, out, pool);
        return new CpuActivation(out, tokens, heads * headDim);
    }

    /** The segment's store as a CPU store whose open step is exactly the segment's positions. */
    private static CpuKvStore checkedStore(Segment seg, int layer, int kvDim) {
        if (!(seg.kv() instanceof CpuKvStore store)) {
            throw new IllegalArgumentException("the cpu attention needs a cpu kv store, got " + seg.kv().getClass().getName());
        }
        if (store.kvDim() != kvDim) throw new IllegalArgumentException("kv store holds entries of " + store.kvDim() + ", attention needs " + kvDim);
        if (layer < 0 || layer >= store.layers()) throw new IndexOutOfBoundsException("layer " + layer + " outside [0, " + store.layers() + ")");
        seg.requireOpenStep("attention");
        return store;
    }

    public Activation swiglu(Activation gate, Activation up) {
        CpuActivation g = cpu(gate), u = cpu(up);
        sameShape(g, u, "swiglu");
        float[] out = buffers.floats(g.data().length);
        forRows(g.tokens(), g.tokens(), (long) g.tokens() * g.width() * SWIGLU_WEIGHT, (from, to) -> {
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
        float[] out = buffers.floats(x.data().length);
        for (int i = 0; i < out.length; i++) out[i] = x.data()[i] + y.data()[i];
        return new CpuActivation(out, x.tokens(), x.width());
    }

    public Activation rows(Activation x, int[] rows) {
        CpuActivation in = cpu(x);
        float[] out = buffers.floats(rows.length * in.width());
        for (int i = 0; i < rows.length; i++) {
            if (rows[i] < 0 || rows[i] >= in.tokens()) throw new IndexOutOfBoundsException("row " + rows[i] + " of " + in.tokens());
            System.arraycopy(in.data(), rows[i] * in.width(), out, i * in.width(), in.width());
        }
        return new CpuActivation(out, rows.length, in.width());
    }

    public Activation columns(Activation x, int[] columns) {
        CpuActivation in = cpu(x);
        int w = in.width();
        for (int c : columns) if (c < 0 || c >= w) throw new IndexOutOfBoundsException("column " + c + " of " + w);
        float[] src = in.data();
        float[] out = buffers.floats(in.tokens() * columns.length);
        for (int t = 0; t < in.tokens(); t++) {
            int s = t * w, d = t * columns.length;
            for (int i = 0; i < columns.length; i++) out[d + i] = src[s + columns[i]];
        }
        return new CpuActivation(out, in.tokens(), columns.length);
    }

    public Activation causalConv1dSilu(Activation x, Weight kernel, List<Segment> segments, int layer) {
        return CpuGatedDeltaNet.causalConv1dSilu(cpu(x), cpu(kernel), segments, layer, pool);
    }

    public Activation l2NormHeads(Activation x, int headDim, float eps, float scale) {
        CpuActivation in = cpu(x);
        if (headDim <= 0 || in.width() % headDim != 0) throw new IllegalArgumentException("heads of " + headDim + " in width " + in.width());
        float[] src = in.data();
        float[] dst = buffers.floats(src.length);
        int groups = src.length / headDim;
        forRows(groups, in.tokens(), (long) in.tokens() * in.width(), (from, to) -> {
            for (int r = from; r < to; r++) {
                int off = r * headDim;
                FloatVector acc = FloatVector.zero(S);
                int i = 0;
                for (int bound = S.loopBound(headDim); i < bound; i += S.length()) {
                    FloatVector v = FloatVector.fromArray(S, src, off + i);
                    acc = v.fma(v, acc);
                }
                double ss = inLaneOrder(acc);
                for (; i < headDim; i++) ss += src[off + i] * src[off + i];
                float f = (float) (scale / Math.sqrt(ss + eps));
                for (i = 0; i < headDim; i++) dst[off + i] = src[off + i] * f;
            }
        });
        return new CpuActivation(dst, in.tokens(), in.width());
    }

    public Activation gatedDeltaRule(Activation q, Activation k, Activation v, Activation a, Activation b, Weight aLog,
                                     Weight dtBias, List<Segment> segments, int layer, int keyHeads, int valueHeads,
                                     int keyDim, int valueDim) {
        return CpuGatedDeltaNet.gatedDeltaRule(cpu(q), cpu(k), cpu(v), cpu(a), cpu(b), cpu(aLog).requireVector(),
                cpu(dtBias).requireVector(), segments, layer, keyHeads, valueHeads, keyDim, valueDim, pool);
    }

    public Activation gatedRmsNorm(Activation x, Activation z, Weight gamma, int headDim, float eps) {
        CpuActivation in = cpu(x), gate = cpu(z);
        sameShape(in, gate, "gated rms norm");
        Activation normed = rmsNormHeads(x, gamma, headDim, eps);
        return swiglu(z, normed);   // silu(z) ⊙ (x / rms · gamma)
    }

    public Activation sigmoidGate(Activation x, Activation gate) {
        CpuActivation in = cpu(x), g = cpu(gate);
        if (g.tokens() != in.tokens() || (g.width() != in.width() && g.width() != 1)) {
            throw new IllegalArgumentException("sigmoid gate of " + g.tokens() + "×" + g.width() + " for " + in.tokens() + "×" + in.width());
        }
        float[] src = in.data(), gs = g.data();
        float[] out = buffers.floats(src.length);
        int w = in.width();
        boolean perRow = g.width() == 1;
        for (int i = 0; i < out.length; i++) {
            float s = perRow ? gs[i / w] : gs[i];
            out[i] = src[i] / (1 + (float) Math.exp(-s));
        }
        return new CpuActivation(out, in.tokens(), w);
    }

    public Activation moe(Activation x, dev.forkpoint.backend.ExpertWeights experts) {
        return CpuMoe.forward(cpu(x), experts, pool);
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

    public float[][] hidden(Activation x) {
        CpuActivation h = cpu(x);
        float[][] rows = new float[h.tokens()][];
        for (int t = 0; t < rows.length; t++) {
            rows[t] = new float[h.width()];
            System.arraycopy(h.data(), t * h.width(), rows[t], 0, h.width());
        }
        return rows;
    }

    /** A step buffer holding src's values. */
    private float[] copy(float[] src) {
        float[] out = buffers.floats(src.length);
        System.arraycopy(src, 0, out, 0, src.length);
        return out;
    }

    private static void sameShape(CpuActivation a, CpuActivation b, String op) {
        if (a.tokens() != b.tokens() || a.width() != b.width()) {
            throw new IllegalArgumentException(op + " of " + a.tokens() + "×" + a.width() + " and " + b.tokens() + "×" + b.width());
        }
    }

    /**
     * Runs body over [0, n) in parallel when there are several tokens and {@code elements} is worth a dispatch (at
     * least {@link #PARALLEL_ELEMENTS}); one token's worth, or a few decode rows' norm, is too small to split: the
     * dispatch (waking the workers, waiting for the last) costs more than the work.
     */
    private void forRows(int n, int tokens, long elements, WorkerPool.RangeTask body) {
        if (tokens <= 1 || elements < PARALLEL_ELEMENTS) body.run(0, n);
        else pool.runRanges(n, pool.threads(), body);
    }

    /**
     * The sum of v's lanes in lane order: not {@code reduceLanes(ADD)}, whose order C2 may change from the
     * interpreter's, so that a result never depends on whether the JIT has compiled its kernel yet (see
     * {@link KernelSupport#sum}).
     */
    private static float inLaneOrder(FloatVector v) {
        float s = v.lane(0);
        for (int i = 1; i < v.length(); i++) s += v.lane(i);
        return s;
    }
}
