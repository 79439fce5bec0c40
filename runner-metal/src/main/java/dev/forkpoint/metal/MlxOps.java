package dev.forkpoint.metal;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.ExpertWeights;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.metal.mlxc.MlxArray;
import dev.forkpoint.metal.mlxc.MlxC;
import dev.forkpoint.metal.mlxc.MlxException;
import dev.forkpoint.metal.mlxc.MlxSession;

import java.util.ArrayList;
import java.util.List;

/**
 * The ops on MLX: each builds MLX graph nodes on the backend's MLX thread (float32 activations); {@link #logits}
 * evaluates and copies to the host, together with the recurrent state and the KV arrays the pass wrote (one
 * evaluation per pass). The attention op writes each segment's k and v into its store's MLX arrays
 * ({@link MlxKvArrays}; the pages get them when the step commits) and attends with MLX's SDPA over every position of
 * the store (causal for the step's rows), evaluating nothing — on a Metal GPU, up to 8 rows per sequence go through Forkpoint's
 * own decode kernel instead ({@link MetalSdpaDecode}), planned within each pipeline's thread limit. The hybrids' ops: the causal convolution and the gated delta
 * rule (its recurrent form, token by token) read each segment's committed state and hand their new state to the open
 * step; the mixture of experts evaluates its router's logits, routes on the host and multiplies each chosen expert's
 * rows with slices of the stacked weights. The activations of a forward pass are owned by the pass: freed when its
 * logits are read, or when a step begins or rolls back on one of the backend's stores (see {@link MlxKvStore});
 * intermediate handles inside an op are freed at once (MLX's graph keeps what it still needs). So a pass holds all its
 * activations until it ends: correct first, leaner later.
 * Shape errors MLX finds surface as {@link MlxException}s carrying MLX's message.
 */
final class MlxOps implements Ops {
    private final MlxBackend backend;
    private final List<MlxArray> pass = new ArrayList<>();
    private final List<MlxRecurrentState> passStates = new ArrayList<>();   // states the pass wrote (evaluated with its logits)
    private final List<MlxKvArrays> passKv = new ArrayList<>();             // KV arrays the pass wrote (evaluated with its logits)

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
        passStates.clear();
        passKv.clear();
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
            if (MlxFaults.failThisMatmul()) {   // the tests' fault seam: MLX's own shape error
                try (MlxArray short1 = s().slice(in.array(), new int[] {0, 0}, new int[] {in.tokens(), in.width() - 1})) {
                    return keep(product(short1, mlx(w)), in.tokens(), w.rows());
                }
            }
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
            List<MlxArray> outs = new ArrayList<>(n);
            try {
                for (int i = 0, row = 0; i < n; i++) {
                    Segment seg = segments.get(i);
                    outs.add(attendSegment(qa.array(), ka.array(), va.array(), row, seg, stores[i], layer, heads, kvHeads, headDim));
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
     * Writes the segment's rows [row, row + n) of k and v into its store's MLX arrays (the open step's positions) and
     * attends its query rows with MLX's SDPA over positions [0, startPos + n); MLX's causal mask aligns the n query
     * rows with the last n keys, so row t sees positions 0 … startPos + t. Nothing is evaluated here.
     */
    private MlxArray attendSegment(MlxArray q, MlxArray k, MlxArray v, int row, Segment seg, MlxKvStore store, int layer,
                                   int heads, int kvHeads, int headDim) {
        MlxSession s = s();
        int n = seg.tokens().length;
        int positions = seg.startPos() + n;
        MlxKvArrays arrays = store.arrays();
        try (MlxKvArrays.Views kv = arrays.append(s, layer, k, v, row, n, kvHeads, headDim)) {
            if (!passKv.contains(arrays)) passKv.add(arrays);
            MetalSdpaDecode decode = backend.decodeKernel();
            if (decode != null && n <= MetalSdpaDecode.MAX_ROWS) {
                try (MlxArray kHeads = s.reshape(kv.keys(), kvHeads, positions, headDim);
                     MlxArray vHeads = s.reshape(kv.values(), kvHeads, positions, headDim);
                     MlxArray qRows = s.slice(q, new int[] {row, 0}, new int[] {row + n, heads * headDim})) {
                    return decode.attend(qRows, kHeads, vHeads, kvHeads, heads / kvHeads, n, headDim, positions, MlxC.MLX_FLOAT32);
                } catch (MlxException | IllegalStateException e) {
                    // a thread limit the plan could not get under is this request's error; anything else (the kernel
                    // does not compile, …) turns the kernel off and this call goes on with MLX's SDPA
                    if (ThreadgroupLimitError.parse(String.valueOf(e.getMessage())).isPresent()) throw e;
                    backend.decodeKernelFailed(e);
                }
            }
            try (MlxArray qRows = s.slice(q, new int[] {row, 0}, new int[] {row + n, heads * headDim});
                 MlxArray q4 = s.reshape(qRows, 1, n, heads, headDim);
                 MlxArray qT = s.transpose(q4, 0, 2, 1, 3);
                 MlxArray o = s.scaledDotProductAttention(qT, kv.keys(), kv.values(), (float) (1.0 / Math.sqrt(headDim)), "causal", null);
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
                    // the recurrent state the pass wrote is evaluated with its logits (one evaluation)
                    List<MlxArray> outputs = new ArrayList<>();
                    outputs.add(l);
                    for (MlxRecurrentState st : passStates) outputs.addAll(st.unevaluated());
                    for (MlxKvArrays kv : passKv) outputs.addAll(kv.unevaluated());
                    s().eval(outputs.toArray(MlxArray[]::new));
                    for (MlxRecurrentState st : passStates) st.markEvaluated();
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

    public float[][] hidden(Activation x) {
        return backend.call(() -> {
            try {
                MlxActivation in = mlx(x);
                // evaluated with the recurrent state and KV arrays the pass wrote, as logits are (one evaluation)
                List<MlxArray> outputs = new ArrayList<>();
                outputs.add(in.array());
                for (MlxRecurrentState st : passStates) outputs.addAll(st.unevaluated());
                for (MlxKvArrays kv : passKv) outputs.addAll(kv.unevaluated());
                s().eval(outputs.toArray(MlxArray[]::new));
                for (MlxRecurrentState st : passStates) st.markEvaluated();
                float[] flat = host(in.array());
                int width = in.width();
                if (flat.length != (long) in.tokens() * width) {
                    throw new IllegalStateException(flat.length + " values for " + in.tokens() + " rows of " + width);
                }
                float[][] out = new float[in.tokens()][];
                for (int t = 0; t < out.length; t++) {
                    out[t] = new float[width];
                    System.arraycopy(flat, t * width, out[t], 0, width);
                }
                return out;
            } finally {
                releasePass();
            }
        });
    }

    // ---- the hybrids (Gated DeltaNet, gated attention) and mixtures of experts ----

    public Activation columns(Activation x, int[] columns) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            int w = in.width();
            boolean range = columns.length > 0;
            for (int i = 0; i < columns.length; i++) {
                int c = columns[i];
                if (c < 0 || c >= w) throw new IndexOutOfBoundsException("column " + c + " of " + w);
                if (c != columns[0] + i) range = false;
            }
            MlxSession s = s();
            if (range) {   // a run of consecutive columns (every split of a fused projection): a slice
                return keep(s.slice(in.array(), new int[] {0, columns[0]}, new int[] {in.tokens(), columns[0] + columns.length}),
                        in.tokens(), columns.length);
            }
            try (MlxArray idx = s.fromInts(columns, columns.length)) {
                return keep(s.takeAxis(in.array(), idx, 1), in.tokens(), columns.length);
            }
        });
    }

    /** The recurrent state of a segment's store, an MLX one whose open step is exactly the segment's positions. */
    private static MlxRecurrentState recurrentOf(Segment seg, int layer, String op) {
        if (!(seg.kv() instanceof MlxKvStore store)) {
            throw new IllegalArgumentException(op + " needs an MLX kv store, got " + seg.kv().getClass().getName());
        }
        MlxRecurrentState st = store.recurrent();
        if (layer < 0 || layer >= st.layout().layers()) {
            throw new IndexOutOfBoundsException("linear layer " + layer + " outside [0, " + st.layout().layers() + ")");
        }
        seg.requireOpenStep(op);
        return st;
    }

    private static void checkRows(MlxActivation x, List<Segment> segments, String op, String what) {
        int rows = Segment.rows(segments);
        if (x.tokens() != rows) throw new IllegalArgumentException(op + ": " + what + " has " + x.tokens() + " rows for " + rows + " segment rows");
    }

    /**
     * Per segment: xin = [committed window ; its rows of x] ([K−1+n, C]), out row t = silu(Σ_j kernel[:, j] ⊙ xin[t+j]),
     * the new window xin's last K−1 rows (made contiguous, so that it holds no more than itself) handed to the open
     * step. Every check and every MLX node comes first; the windows are handed over only when all were built.
     */
    public Activation causalConv1dSilu(Activation x, Weight kernel, List<Segment> segments, int layer) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            MlxWeight kw = mlx(kernel);
            int channels = in.width(), taps = kw.cols();
            if (kw.kind != MlxWeight.Kind.DENSE) {
                throw new IllegalArgumentException("causal conv1d: kernel " + kernel.name() + " is " + kw.kind + ", a channels × K matrix was expected");
            }
            if (kw.rows() != channels) {
                throw new IllegalArgumentException("causal conv1d: kernel " + kernel.name() + " has " + kw.rows() + " rows for " + channels + " channels");
            }
            checkRows(in, segments, "causal conv1d", "x");
            int n = segments.size();
            MlxRecurrentState[] states = new MlxRecurrentState[n];
            for (int i = 0; i < n; i++) {
                states[i] = recurrentOf(segments.get(i), layer, "causal conv1d");
                var lay = states[i].layout();
                if (lay.convChannels() != channels || lay.convKernel() != taps) {
                    throw new IllegalArgumentException("causal conv1d of " + channels + " channels with kernel " + taps
                            + ", but the recurrent state keeps windows of " + lay.convChannels() + " channels for kernel " + lay.convKernel());
                }
            }
            MlxSession s = s();
            int hist = taps - 1;
            List<MlxArray> temps = new ArrayList<>(), outs = new ArrayList<>();
            MlxArray[] windows = new MlxArray[n];
            boolean handed = false;
            try {
                MlxArray kF = temp(temps, s.astype(kw.array, MlxC.MLX_FLOAT32));
                MlxArray kT = temp(temps, s.transpose(kF, 1, 0));   // [K, C]
                MlxArray[] tap = new MlxArray[taps];
                for (int j = 0; j < taps; j++) tap[j] = temp(temps, s.slice(kT, new int[] {j, 0}, new int[] {j + 1, channels}));
                for (int i = 0, row = 0; i < n; i++) {
                    int len = segments.get(i).tokens().length;
                    MlxArray rows = temp(temps, s.slice(in.array(), new int[] {row, 0}, new int[] {row + len, channels}));
                    MlxArray xin = temp(temps, s.concatenate(0, states[i].conv(s, layer), rows));
                    MlxArray acc = null;
                    for (int j = 0; j < taps; j++) {
                        MlxArray shifted = temp(temps, s.slice(xin, new int[] {j, 0}, new int[] {j + len, channels}));
                        MlxArray term = temp(temps, s.multiply(shifted, tap[j]));
                        acc = acc == null ? term : temp(temps, s.add(acc, term));
                    }
                    MlxArray sig = temp(temps, s.sigmoid(acc));
                    outs.add(s.multiply(acc, sig));
                    MlxArray last = temp(temps, s.slice(xin, new int[] {len, 0}, new int[] {len + hist, channels}));
                    windows[i] = s.contiguous(last);
                    row += len;
                }
                MlxArray out = outs.size() == 1 ? outs.removeFirst() : s.concatenate(0, outs.toArray(MlxArray[]::new));
                MlxActivation result = keep(out, in.tokens(), channels);
                for (int i = 0; i < n; i++) states[i].setPendingConv(layer, windows[i]);
                handed = true;
                touched(states);
                return result;
            } finally {
                for (MlxArray t : temps) t.close();
                for (MlxArray o : outs) o.close();
                if (!handed) for (MlxArray w : windows) if (w != null) w.close();
            }
        });
    }

    private static MlxArray temp(List<MlxArray> temps, MlxArray a) {
        temps.add(a);
        return a;
    }

    /** A float32 array of one value (broadcast by MLX), for the caller to close. */
    private MlxArray scalar(float v) {
        return s().fromFloats(new float[] {v}, 1);
    }

    public Activation l2NormHeads(Activation x, int headDim, float eps, float scale) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            if (headDim <= 0 || in.width() % headDim != 0) throw new IllegalArgumentException("heads of " + headDim + " in width " + in.width());
            MlxSession s = s();
            List<MlxArray> temps = new ArrayList<>();
            try {
                MlxArray heads = temp(temps, s.reshape(in.array(), in.tokens(), in.width() / headDim, headDim));
                MlxArray sq = temp(temps, s.square(heads));
                MlxArray ss = temp(temps, s.sumAxis(sq, 2, true));
                MlxArray ssEps = temp(temps, s.add(ss, temp(temps, scalar(eps))));
                MlxArray inv = temp(temps, s.rsqrt(ssEps));
                if (scale != 1f) inv = temp(temps, s.multiply(inv, temp(temps, scalar(scale))));
                MlxArray normed = temp(temps, s.multiply(heads, inv));
                return keep(s.reshape(normed, in.tokens(), in.width()), in.tokens(), in.width());
            } finally {
                for (MlxArray t : temps) t.close();
            }
        });
    }

    /**
     * The delta rule in its recurrent form, token by token (the CPU takes a chunked form for long segments; both agree
     * to float rounding). The gates of every row first, in one go: decay = exp(−exp(aLog) · softplus(a + dtBias)),
     * softplus(x) = logaddexp(x, 0), β = sigmoid(b); q and k repeated to the value heads (value head j reads key head
     * j / (Hv/Hk)). Then per token, S [1, Hv, Dk, Dv] (the committed state at first): S ← S·decay;
     * δ = (v − kᵀS)·β; S ← S + k δᵀ; out = qᵀS. Each segment's last S goes to its open step.
     */
    public Activation gatedDeltaRule(Activation q, Activation k, Activation v, Activation a, Activation b, Weight aLog,
                                     Weight dtBias, List<Segment> segments, int layer, int keyHeads, int valueHeads,
                                     int keyDim, int valueDim) {
        return backend.call(() -> {
            if (keyHeads < 1 || valueHeads < 1 || keyDim < 1 || valueDim < 1 || valueHeads % keyHeads != 0) {
                throw new IllegalArgumentException("gated delta rule: " + valueHeads + " value heads cannot share " + keyHeads
                        + " key heads (dims " + keyDim + "/" + valueDim + ")");
            }
            MlxActivation qa = mlx(q), ka = mlx(k), va = mlx(v), aa = mlx(a), ba = mlx(b);
            int tokens = Segment.rows(segments);
            int qkW = keyHeads * keyDim, vW = valueHeads * valueDim;
            checkShape(qa, tokens, qkW, "q");
            checkShape(ka, tokens, qkW, "k");
            checkShape(va, tokens, vW, "v");
            checkShape(aa, tokens, valueHeads, "a");
            checkShape(ba, tokens, valueHeads, "b");
            MlxWeight decayLog = vector(aLog, valueHeads, "the gated delta rule's A_log");
            MlxWeight bias = vector(dtBias, valueHeads, "the gated delta rule's dt_bias");
            int n = segments.size();
            MlxRecurrentState[] states = new MlxRecurrentState[n];
            for (int i = 0; i < n; i++) {
                states[i] = recurrentOf(segments.get(i), layer, "gated delta rule");
                var lay = states[i].layout();
                if (lay.valueHeads() != valueHeads || lay.keyDim() != keyDim || lay.valueDim() != valueDim) {
                    throw new IllegalArgumentException("gated delta rule over " + valueHeads + " heads of " + keyDim + "×" + valueDim
                            + ", but the recurrent state keeps " + lay.valueHeads() + " heads of " + lay.keyDim() + "×" + lay.valueDim());
                }
            }
            MlxSession s = s();
            List<MlxArray> temps = new ArrayList<>(), outs = new ArrayList<>();
            MlxArray[] finals = new MlxArray[n];
            boolean handed = false;
            try {
                // gates of every row and value head: [T, Hv, 1, 1]
                MlxArray zero = temp(temps, scalar(0f));
                MlxArray shifted = temp(temps, s.add(aa.array(), bias.array));
                MlxArray softplus = temp(temps, s.logaddexp(shifted, zero));
                MlxArray rate = temp(temps, s.exp(decayLog.array));
                MlxArray g = temp(temps, s.multiply(softplus, rate));
                MlxArray negG = temp(temps, s.subtract(zero, g));
                MlxArray decay = temp(temps, s.reshape(temp(temps, s.exp(negG)), tokens, valueHeads, 1, 1));
                MlxArray beta = temp(temps, s.reshape(temp(temps, s.sigmoid(ba.array())), tokens, valueHeads, 1, 1));
                // q, k per value head: [T, Hv, 1, Dk] (and k as columns [T, Hv, Dk, 1]); v [T, Hv, 1, Dv]
                MlxArray qh = temp(temps, s.reshape(qa.array(), tokens, keyHeads, keyDim));
                MlxArray kh = temp(temps, s.reshape(ka.array(), tokens, keyHeads, keyDim));
                if (valueHeads != keyHeads) {
                    int ratio = valueHeads / keyHeads;
                    int[] idx = new int[valueHeads];
                    for (int j = 0; j < valueHeads; j++) idx[j] = j / ratio;
                    MlxArray heads = temp(temps, s.fromInts(idx, valueHeads));
                    qh = temp(temps, s.takeAxis(qh, heads, 1));
                    kh = temp(temps, s.takeAxis(kh, heads, 1));
                }
                MlxArray qRow = temp(temps, s.reshape(qh, tokens, valueHeads, 1, keyDim));
                MlxArray kRow = temp(temps, s.reshape(kh, tokens, valueHeads, 1, keyDim));
                MlxArray kCol = temp(temps, s.reshape(kh, tokens, valueHeads, keyDim, 1));
                MlxArray vRow = temp(temps, s.reshape(va.array(), tokens, valueHeads, 1, valueDim));
                for (int i = 0, row = 0; i < n; i++) {
                    int len = segments.get(i).tokens().length;
                    MlxArray st = temp(temps, s.reshape(states[i].state(s, layer), 1, valueHeads, keyDim, valueDim));
                    for (int t = row; t < row + len; t++) {
                        MlxArray dt = temp(temps, token(decay, t));
                        MlxArray bt = temp(temps, token(beta, t));
                        MlxArray kt = temp(temps, token(kRow, t));
                        MlxArray kc = temp(temps, token(kCol, t));
                        MlxArray vt = temp(temps, token(vRow, t));
                        MlxArray qt = temp(temps, token(qRow, t));
                        MlxArray decayed = temp(temps, s.multiply(st, dt));
                        MlxArray recalled = temp(temps, s.matmul(kt, decayed));          // kᵀS: [1, Hv, 1, Dv]
                        MlxArray err = temp(temps, s.subtract(vt, recalled));
                        MlxArray delta = temp(temps, s.multiply(err, bt));
                        MlxArray outer = temp(temps, s.matmul(kc, delta));              // k δᵀ: [1, Hv, Dk, Dv]
                        st = temp(temps, s.add(decayed, outer));
                        outs.add(s.matmul(qt, st));                                      // qᵀS: [1, Hv, 1, Dv]
                    }
                    finals[i] = s.reshape(st, valueHeads, keyDim, valueDim);
                    row += len;
                }
                MlxArray all = outs.size() == 1 ? outs.getFirst() : temp(temps, s.concatenate(0, outs.toArray(MlxArray[]::new)));
                MlxActivation result = keep(s.reshape(all, tokens, vW), tokens, vW);
                for (int i = 0; i < n; i++) states[i].setPendingState(layer, finals[i]);
                handed = true;
                touched(states);
                return result;
            } finally {
                for (MlxArray t : temps) t.close();
                for (MlxArray o : outs) o.close();
                if (!handed) for (MlxArray f : finals) if (f != null) f.close();
            }
        });
    }

    /** Row t of a [T, …] array, as [1, …]. */
    private MlxArray token(MlxArray a, int t) {
        int[] shape = a.shape();
        int[] start = new int[shape.length], stop = shape.clone();
        start[0] = t;
        stop[0] = t + 1;
        return s().slice(a, start, stop);
    }

    private static void checkShape(MlxActivation a, int tokens, int width, String what) {
        if (a.tokens() != tokens || a.width() != width) {
            throw new IllegalArgumentException("gated delta rule: " + what + " is " + a.tokens() + "×" + a.width() + ", expected " + tokens + "×" + width);
        }
    }

    /** The states a pass wrote, evaluated with its logits. */
    private void touched(MlxRecurrentState[] states) {
        for (MlxRecurrentState st : states) if (!passStates.contains(st)) passStates.add(st);
    }

    public Activation gatedRmsNorm(Activation x, Activation z, Weight gamma, int headDim, float eps) {
        return backend.call(() -> {
            MlxActivation in = mlx(x), gate = mlx(z);
            sameShape(in, gate, "gated rms norm");
            MlxWeight g = vector(gamma, headDim, "gated rms norm");
            if (headDim <= 0 || in.width() % headDim != 0) throw new IllegalArgumentException("heads of " + headDim + " in width " + in.width());
            MlxSession s = s();
            try (MlxArray heads = s.reshape(in.array(), in.tokens(), in.width() / headDim, headDim);
                 MlxArray normed = s.rmsNorm(heads, g.array, eps);
                 MlxArray flat = s.reshape(normed, in.tokens(), in.width());
                 MlxArray sig = s.sigmoid(gate.array());
                 MlxArray silu = s.multiply(gate.array(), sig)) {
                return keep(s.multiply(flat, silu), in.tokens(), in.width());
            }
        });
    }

    public Activation sigmoidGate(Activation x, Activation gate) {
        return backend.call(() -> {
            MlxActivation in = mlx(x), g = mlx(gate);
            if (g.tokens() != in.tokens() || (g.width() != in.width() && g.width() != 1)) {
                throw new IllegalArgumentException("sigmoid gate of " + g.tokens() + "×" + g.width() + " for " + in.tokens() + "×" + in.width());
            }
            MlxSession s = s();
            try (MlxArray sig = s.sigmoid(g.array())) {   // a [T, 1] gate broadcasts over the row
                return keep(s.multiply(in.array(), sig), in.tokens(), in.width());
            }
        });
    }

    /**
     * The mixture: the router's logits are evaluated and routed on the host (softmax in double, the top k with ties to
     * the lower expert index, renormalised when asked: as the CPU backend routes); then each chosen expert multiplies
     * only the rows routed to it with only its rows of the stacked weights (a slice of the uploaded matrix; gate and
     * up as one product when fused), h = silu(g) ⊙ u, y = down(h), and a host-made placement matrix P [T, n_e]
     * (P[token, i] = the weight of the expert for its i-th row) adds P·y to the output, in ascending expert order.
     */
    public Activation moe(Activation x, ExpertWeights experts) {
        return backend.call(() -> {
            MlxActivation in = mlx(x);
            int n = in.tokens(), dim = experts.dim(), count = experts.count(), topK = experts.topK(), ffn = experts.ffnDim();
            if (in.width() != dim) throw new IllegalArgumentException("experts take " + dim + " inputs, the activation has " + in.width());
            MlxWeight router = mlx(experts.router());
            if (router.cols() != dim) {
                throw new IllegalArgumentException(router.name() + " takes " + router.cols() + " inputs, the experts " + dim);
            }
            MlxSession s = s();
            float[] logits;
            try (MlxArray l = product(in.array(), router)) {
                logits = host(l);
            }
            int[] chosen = new int[n * topK];
            float[] weights = new float[n * topK];
            dev.forkpoint.backend.ExpertRouting.route(logits, n, count, topK, experts.renormalize(), chosen, weights, null);
            ExpertWeights.ExpertRows gate = experts.gate(), up = experts.up(), down = experts.down();
            boolean fused = gate.perExpert() == null && up.perExpert() == null && gate.weight() == up.weight()
                    && up.stride() == gate.stride() && up.offset() == gate.offset() + ffn;
            List<MlxArray> temps = new ArrayList<>();
            MlxArray acc = null;
            try {
                for (int e = 0; e < count; e++) {
                    int ne = 0;
                    for (int c : chosen) if (c == e) ne++;
                    if (ne == 0) continue;
                    int[] rows = new int[ne];
                    float[] place = new float[n * ne];
                    for (int t = 0, i = 0; t < n; t++) {
                        for (int j = 0; j < topK; j++) {
                            if (chosen[t * topK + j] != e) continue;
                            rows[i] = t;
                            place[t * ne + i] = weights[t * topK + j];
                            i++;
                        }
                    }
                    MlxArray xe = in.array();
                    if (ne != n) {
                        MlxArray idx = temp(temps, s.fromInts(rows, ne));
                        xe = temp(temps, s.takeAxis(in.array(), idx, 0));
                    }
                    MlxArray g, u;
                    if (fused) {
                        MlxArray gu = temp(temps, productRows(xe, mlx(gate.weight(e)), gate.firstRow(e), 2 * ffn));
                        g = temp(temps, s.slice(gu, new int[] {0, 0}, new int[] {ne, ffn}));
                        u = temp(temps, s.slice(gu, new int[] {0, ffn}, new int[] {ne, 2 * ffn}));
                    } else {
                        g = temp(temps, productRows(xe, mlx(gate.weight(e)), gate.firstRow(e), ffn));
                        u = temp(temps, productRows(xe, mlx(up.weight(e)), up.firstRow(e), ffn));
                    }
                    MlxArray sig = temp(temps, s.sigmoid(g));
                    MlxArray silu = temp(temps, s.multiply(g, sig));
                    MlxArray h = temp(temps, s.multiply(silu, u));
                    MlxArray y = temp(temps, productRows(h, mlx(down.weight(e)), down.firstRow(e), dim));
                    MlxArray p = temp(temps, s.fromFloats(place, n, ne));
                    MlxArray contribution = temp(temps, s.matmul(p, y));
                    acc = acc == null ? contribution : temp(temps, s.add(acc, contribution));
                }
                if (acc == null) throw new IllegalStateException("no expert was chosen for " + n + " rows");
                return keep(s.contiguous(acc), n, dim);
            } finally {
                for (MlxArray t : temps) t.close();
            }
        });
    }

    /** x · (rows [first, first + count) of w)ᵀ: a slice of the uploaded matrix (codes, scales and biases alike). */
    private MlxArray productRows(MlxArray x, MlxWeight w, int first, int count) {
        if (first < 0 || count < 1 || first + count > w.rows()) {
            throw new IndexOutOfBoundsException(w.name() + ": rows [" + first + ", " + (first + count) + ") of " + w.rows());
        }
        MlxSession s = s();
        return switch (w.kind) {
            case DENSE -> {
                try (MlxArray rows = s.slice(w.array, new int[] {first, 0}, new int[] {first + count, w.cols()});
                     MlxArray t = s.transpose(rows, 1, 0)) {
                    yield s.matmul(x, t);
                }
            }
            case AFFINE -> {
                int[] codesShape = w.array.shape(), groupsShape = w.scales.shape();
                try (MlxArray codes = s.slice(w.array, new int[] {first, 0}, new int[] {first + count, codesShape[1]});
                     MlxArray scales = s.slice(w.scales, new int[] {first, 0}, new int[] {first + count, groupsShape[1]});
                     MlxArray biases = s.slice(w.biases, new int[] {first, 0}, new int[] {first + count, groupsShape[1]})) {
                    yield s.quantizedMatmul(x, codes, scales, biases, true, w.groupSize, w.bits, "affine");
                }
            }
            case VECTOR -> throw new IllegalArgumentException(w.name() + " is a vector, not an expert's matrix");
        };
    }

}
