package dev.forkpoint.metal;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.ExpertWeights;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvKind;
import dev.forkpoint.metal.mlxc.MlxArray;
import dev.forkpoint.metal.mlxc.MlxC;
import dev.forkpoint.metal.mlxc.MlxException;
import dev.forkpoint.metal.mlxc.MlxSession;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The ops on MLX: each builds MLX graph nodes on the backend's MLX thread (float32 activations); {@link #logits}
 * evaluates and copies to the host. The attention op evaluates its k and v to store them in the kv-cache pages, then
 * attends with MLX's SDPA over every position of the segment's store, copied from the pages (causal for the step's
 * rows). The activations of a forward pass are owned by the pass: freed when its logits are read, or when a step begins
 * or rolls back on one of the backend's stores (see {@link MlxKvStore}); intermediate handles inside an op are freed
 * at once (MLX's graph keeps what it still needs). So a pass holds all its activations until it ends: correct first,
 * leaner later.
 * Shape errors MLX finds surface as {@link MlxException}s carrying MLX's message.
 */
final class MlxOps implements Ops {
    private final MlxBackend backend;
    private final List<MlxArray> pass = new ArrayList<>();

    MlxOps(MlxBackend backend) {
        this.backend = backend;
    }

    private MlxSession s() { return backend.session(); }

    private MlxActivation keep(MlxArray array, int tokens, int width) {
        pass.add(array);
        return new MlxActivation(array, tokens, width);
    }

    /** Frees every array of the current pass (on the MLX thread). */
    void releasePass() {
        RuntimeException first = null;
        for (MlxArray a : pass) {
            try {
                a.close();
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
        }
        pass.clear();
        if (first != null) throw first;
    }

    private static MlxActivation mlx(Activation a) {
        if (!(a instanceof MlxActivation m)) {
            throw new IllegalArgumentException("the MLX ops need MLX activations, got " + a.getClass().getName());
        }
        return m;
    }

    private static MlxWeight mlx(Weight w) {
        if (!(w instanceof MlxWeight m)) throw new IllegalArgumentException("the MLX ops need MLX weights, got " + w.getClass().getName());
        return m;
    }

    private static MlxWeight vector(Weight w, int length, String what) {
        MlxWeight m = mlx(w);
        if (m.kind != MlxWeight.Kind.VECTOR || m.cols() != length) {
            throw new IllegalArgumentException(w.name() + " (" + m.rows() + "×" + m.cols() + ") is not a vector of " + length + " for " + what);
        }
        return m;
    }

    private static void sameShape(MlxActivation a, MlxActivation b, String op) {
        if (a.tokens() != b.tokens() || a.width() != b.width()) {
            throw new IllegalArgumentException(op + " of " + a.tokens() + "×" + a.width() + " and " + b.tokens() + "×" + b.width());
        }
    }

    public Activation embed(Weight table, int[] tokens) {
        return backend.call(() -> {
            MlxWeight t = mlx(table);
            if (t.kind == MlxWeight.Kind.VECTOR) throw new IllegalArgumentException(table.name() + " is a vector, not an embedding table");
            for (int id : tokens) {
                if (id < 0 || id >= t.rows()) throw new IllegalArgumentException("token id " + id + " outside the vocabulary of " + t.rows());
            }
            MlxSession s = s();
            try (MlxArray idx = s.fromInts(tokens, tokens.length)) {
                if (t.kind == MlxWeight.Kind.DENSE) {
                    try (MlxArray rows = s.takeAxis(t.array, idx, 0)) {
                        return keep(s.astype(rows, MlxC.MLX_FLOAT32), tokens.length, t.cols());
                    }
                }
                try (MlxArray codes = s.takeAxis(t.array, idx, 0);
                     MlxArray scales = s.takeAxis(t.scales, idx, 0);
                     MlxArray biases = s.takeAxis(t.biases, idx, 0)) {
                    return keep(s.dequantize(codes, scales, biases, t.groupSize, t.bits, "affine", MlxC.MLX_FLOAT32),
                            tokens.length, t.cols());
                }
            }
        });
    }

    public Activation rmsNorm(Activation x, Weight gamma, float eps) {
        return rmsNormHeads(x, gamma, x.width(), eps);
    }

    public Activation rmsNormHeads(Activation x, Weight gamma, int headDim, float eps) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            MlxWeight g = vector(gamma, headDim, "rms norm");
            if (headDim <= 0 || in.width() % headDim != 0) throw new IllegalArgumentException("heads of " + headDim + " in width " + in.width());
            MlxSession s = s();
            if (headDim == in.width()) return keep(s.rmsNorm(in.array(), g.array, eps), in.tokens(), in.width());
            try (MlxArray heads = s.reshape(in.array(), in.tokens(), in.width() / headDim, headDim);
                 MlxArray normed = s.rmsNorm(heads, g.array, eps)) {
                return keep(s.reshape(normed, in.tokens(), in.width()), in.tokens(), in.width());
            }
        });
    }

    public Activation matmul(Activation x, Weight w) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            return keep(product(in.array(), mlx(w)), in.tokens(), w.rows());
        });
    }

    /** x · wᵀ, MLX checking the shapes (its message in the exception). */
    private MlxArray product(MlxArray x, MlxWeight w) {
        MlxSession s = s();
        return switch (w.kind) {
            case AFFINE -> s.quantizedMatmul(x, w.array, w.scales, w.biases, true, w.groupSize, w.bits, "affine");
            case DENSE -> {
                try (MlxArray t = s.transpose(w.array, 1, 0)) {
                    yield s.matmul(x, t);
                }
            }
            case VECTOR -> {
                try (MlxArray row = s.reshape(w.array, 1, w.cols()); MlxArray t = s.transpose(row, 1, 0)) {
                    yield s.matmul(x, t);
                }
            }
        };
    }

    public Activation addBias(Activation x, Weight bias) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            MlxWeight b = vector(bias, in.width(), "a bias");
            return keep(s().add(in.array(), b.array), in.tokens(), in.width());
        });
    }

    public Activation rope(Activation x, int headDim, int[] positions, Rope rope) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            if (positions.length != in.tokens()) throw new IllegalArgumentException(positions.length + " positions for " + in.tokens() + " tokens");
            if (headDim <= 0 || in.width() % headDim != 0 || rope.dims() > headDim) {
                throw new IllegalArgumentException("rope of " + rope.dims() + " dims over heads of " + headDim + " in width " + in.width());
            }
            MlxSession s = s();
            int heads = in.width() / headDim;
            MlxArray freqs = null;
            try {
                if (rope.freqFactors() != null) {
                    double[] inv = rope.inverseFrequencies();
                    float[] periods = new float[inv.length];
                    for (int i = 0; i < inv.length; i++) periods[i] = (float) (1.0 / inv[i]);
                    freqs = s.fromFloats(periods, periods.length);
                }
                // runs of consecutive positions (one per segment), each rotated from its first position
                List<MlxArray> runs = new ArrayList<>();
                try {
                    for (int start = 0; start < positions.length; ) {
                        int end = start + 1;
                        while (end < positions.length && positions[end] == positions[end - 1] + 1) end++;
                        runs.add(ropeRun(in, start, end, heads, headDim, positions[start], rope, freqs));
                        start = end;
                    }
                    if (runs.size() == 1) {
                        MlxArray only = runs.removeFirst();
                        return keep(only, in.tokens(), in.width());
                    }
                    return keep(s.concatenate(0, runs.toArray(MlxArray[]::new)), in.tokens(), in.width());
                } finally {
                    for (MlxArray r : runs) r.close();
                }
            } finally {
                if (freqs != null) freqs.close();
            }
        });
    }

    private MlxArray ropeRun(MlxActivation in, int start, int end, int heads, int headDim, int offset, Rope rope, MlxArray freqs) {
        MlxSession s = s();
        int n = end - start;
        try (MlxArray rows = s.slice(in.array(), new int[] {start, 0}, new int[] {end, in.width()});
             MlxArray split = s.reshape(rows, 1, n, heads, headDim);
             MlxArray byHead = s.transpose(split, 0, 2, 1, 3);
             MlxArray rotated = s.rope(byHead, rope.dims(), !rope.neox(), freqs == null ? (float) rope.freqBase() : null,
                     1.0f, offset, freqs);
             MlxArray back = s.transpose(rotated, 0, 2, 1, 3)) {
            return s.reshape(back, n, in.width());
        }
    }

    public Activation attention(Activation q, Activation k, Activation v, List<Segment> segments, int layer,
                                int heads, int kvHeads, int headDim) {
        return backend.call(() -> {
            MlxActivation qa = mlx(q), ka = mlx(k), va = mlx(v);
            int tokens = qa.tokens();
            int kvDim = kvHeads * headDim;
            if (qa.width() != heads * headDim || ka.width() != kvDim || va.width() != kvDim || ka.tokens() != tokens
                    || va.tokens() != tokens || Segment.rows(segments) != tokens || kvHeads <= 0 || heads % kvHeads != 0) {
                throw new IllegalArgumentException("attention shapes disagree: q " + qa.tokens() + "×" + qa.width() + ", k "
                        + ka.tokens() + "×" + ka.width() + ", v " + va.tokens() + "×" + va.width() + " for "
                        + Segment.rows(segments) + " segment rows of " + heads + "/" + kvHeads + " heads of " + headDim);
            }
            int n = segments.size();
            MlxKvStore[] stores = new MlxKvStore[n];
            for (int i = 0; i < n; i++) stores[i] = checkedStore(segments.get(i), layer, kvDim);
            MlxSession s = s();
            // this step's k and v, evaluated, into the pages (the sequence checks every position)
            s.eval(ka.array(), va.array());
            float[] kh = host(ka.array()), vh = host(va.array());
            for (int i = 0, row = 0; i < n; i++) {
                Segment seg = segments.get(i);
                for (int t = 0; t < seg.tokens().length; t++, row++) {
                    stores[i].write(layer, seg.startPos() + t, kh, row * kvDim, vh, row * kvDim);
                }
            }
            List<MlxArray> outs = new ArrayList<>(n);
            try {
                for (int i = 0, row = 0; i < n; i++) {
                    Segment seg = segments.get(i);
                    outs.add(attendSegment(qa.array(), row, seg, stores[i], layer, heads, kvHeads, headDim));
                    row += seg.tokens().length;
                }
                if (outs.size() == 1) return keep(outs.removeFirst(), tokens, heads * headDim);
                return keep(s.concatenate(0, outs.toArray(MlxArray[]::new)), tokens, heads * headDim);
            } finally {
                for (MlxArray o : outs) o.close();
            }
        });
    }

    /** The store of a segment, an MLX one whose open step is exactly the segment's positions. */
    private static MlxKvStore checkedStore(Segment seg, int layer, int kvDim) {
        if (!(seg.kv() instanceof MlxKvStore store)) {
            throw new IllegalArgumentException("the MLX attention needs an MLX kv store, got " + seg.kv().getClass().getName());
        }
        if (store.kvDim() != kvDim) throw new IllegalArgumentException("kv store holds entries of " + store.kvDim() + ", attention needs " + kvDim);
        if (layer < 0 || layer >= store.layers()) throw new IndexOutOfBoundsException("layer " + layer + " outside [0, " + store.layers() + ")");
        seg.requireOpenStep("attention");
        return store;
    }

    /**
     * SDPA of the segment's query rows [row, row + n) over positions [0, startPos + n) of its store, copied from the
     * pages; MLX's causal mask aligns the n query rows with the last n keys, so row t sees positions 0 … startPos + t.
     */
    private MlxArray attendSegment(MlxArray q, int row, Segment seg, MlxKvStore store, int layer, int heads,
                                   int kvHeads, int headDim) {
        MlxSession s = s();
        int n = seg.tokens().length;
        int positions = seg.startPos() + n;
        int kvDim = kvHeads * headDim;
        boolean f16 = store.elementType() == KvElementType.F16;
        int dtype = f16 ? MlxC.MLX_FLOAT16 : MlxC.MLX_FLOAT32;
        long bytes = (long) positions * kvDim * store.elementType().bytes();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment keys = arena.allocate(bytes, 4);
            MemorySegment values = arena.allocate(bytes, 4);
            store.copy(layer, KvKind.KEY, positions, keys);
            store.copy(layer, KvKind.VALUE, positions, values);
            try (MlxArray kRaw = s.fromData(keys, dtype, 1, positions, kvHeads, headDim);
                 MlxArray vRaw = s.fromData(values, dtype, 1, positions, kvHeads, headDim);
                 MlxArray kF = s.astype(kRaw, MlxC.MLX_FLOAT32);
                 MlxArray vF = s.astype(vRaw, MlxC.MLX_FLOAT32);
                 MlxArray kT = s.transpose(kF, 0, 2, 1, 3);
                 MlxArray vT = s.transpose(vF, 0, 2, 1, 3);
                 MlxArray qRows = s.slice(q, new int[] {row, 0}, new int[] {row + n, heads * headDim});
                 MlxArray q4 = s.reshape(qRows, 1, n, heads, headDim);
                 MlxArray qT = s.transpose(q4, 0, 2, 1, 3);
                 MlxArray o = s.scaledDotProductAttention(qT, kT, vT, (float) (1.0 / Math.sqrt(headDim)), "causal", null);
                 MlxArray oT = s.transpose(o, 0, 2, 1, 3)) {
                return s.reshape(oT, n, heads * headDim);
            }
        }
    }

    /** An evaluated float32 array's values, row-major. */
    private float[] host(MlxArray a) {
        MlxSession s = s();
        try (MlxArray c = s.contiguous(a)) {
            return s.toFloats(c);
        }
    }

    public Activation swiglu(Activation gate, Activation up) {
        return backend.call(() -> {
            MlxActivation g = mlx(gate), u = mlx(up);
            sameShape(g, u, "swiglu");
            MlxSession s = s();
            try (MlxArray sig = s.sigmoid(g.array()); MlxArray silu = s.multiply(g.array(), sig)) {
                return keep(s.multiply(silu, u.array()), g.tokens(), g.width());
            }
        });
    }

    public Activation add(Activation a, Activation b) {
        return backend.call(() -> {
            MlxActivation x = mlx(a), y = mlx(b);
            sameShape(x, y, "add");
            return keep(s().add(x.array(), y.array()), x.tokens(), x.width());
        });
    }

    public Activation rows(Activation x, int[] rows) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            for (int r : rows) if (r < 0 || r >= in.tokens()) throw new IndexOutOfBoundsException("row " + r + " of " + in.tokens());
            MlxSession s = s();
            try (MlxArray idx = s.fromInts(rows, rows.length)) {
                return keep(s.takeAxis(in.array(), idx, 0), rows.length, in.width());
            }
        });
    }

    public float[][] logits(Activation x, Weight output) {
        return backend.call(() -> {
            try {
                MlxActivation in = mlx(x);
                MlxWeight w = mlx(output);
                float[] flat;
                try (MlxArray l = product(in.array(), w)) {
                    flat = host(l);
                }
                int vocab = w.rows();
                if (flat.length != (long) in.tokens() * vocab) {
                    throw new IllegalStateException(flat.length + " logits for " + in.tokens() + " rows of " + vocab);
                }
                float[][] out = new float[in.tokens()][];
                for (int t = 0; t < out.length; t++) {
                    out[t] = new float[vocab];
                    System.arraycopy(flat, t * vocab, out[t], 0, vocab);
                }
                return out;
            } finally {
                releasePass();
            }
        });
    }

    // ---- not yet on MLX: the hybrids' and mixtures' ops (refused at load by MlxBackend.checkArchitecture) ----

    private static InvalidInputException notYet(String op) {
        return new InvalidInputException(op + ": the MLX backend runs " + String.join(", ", MlxBackend.ARCHITECTURES)
                + " so far; use --backend cpu");
    }

    public Activation columns(Activation x, int[] columns) { throw notYet("columns"); }

    public Activation causalConv1dSilu(Activation x, Weight kernel, List<Segment> segments, int layer) { throw notYet("causalConv1dSilu"); }

    public Activation l2NormHeads(Activation x, int headDim, float eps, float scale) { throw notYet("l2NormHeads"); }

    public Activation gatedDeltaRule(Activation q, Activation k, Activation v, Activation a, Activation b, Weight aLog,
                                     Weight dtBias, List<Segment> segments, int layer, int keyHeads, int valueHeads,
                                     int keyDim, int valueDim) {
        throw notYet("gatedDeltaRule");
    }

    public Activation gatedRmsNorm(Activation x, Activation z, Weight gamma, int headDim, float eps) { throw notYet("gatedRmsNorm"); }

    public Activation sigmoidGate(Activation x, Activation gate) { throw notYet("sigmoidGate"); }

    public Activation moe(Activation x, ExpertWeights experts) { throw notYet("moe"); }
}
