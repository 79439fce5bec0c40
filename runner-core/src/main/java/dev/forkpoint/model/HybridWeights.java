package dev.forkpoint.model;

import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.ExpertWeights;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.tensor.HostMatrix;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;

/**
 * The weights of a Qwen3.5-family model (and Qwen3-MoE), by llama.cpp's GGUF tensor names, prepared on a backend:
 * per layer a mixer (Gated DeltaNet or attention) and a feed-forward (dense or mixture of experts).
 *
 * <p>Values are brought to one convention at load: norm weights multiply directly (Qwen3.5's zero-centred
 * {@code 1 + w} is added here when the tensors are Hugging Face's raw ones, detected as mlx-lm and Ollama do by the
 * convolution's [C, 1, K] shape; mlx-lm folders and GGUF files hold them shifted already); the Gated DeltaNet
 * decay is A_log (GGUF's {@code ssm_a} = −exp(A_log) is converted back); the convolution kernel is channels × K.
 */
record HybridWeights(Weight tokenEmbedding, Layer[] layers, Weight outputNorm, Weight output) {

    record Layer(Weight attnNorm, Mixer mixer, Weight ffnNorm, FeedForward ffn) {}

    sealed interface Mixer permits DeltaNet, Attention {}

    /**
     * A Gated DeltaNet mixer. Split layout (Qwen3.5): qkv, z, b, a projections. Fused layout (Qwen3-Next): qkvz and
     * ba, whose rows are grouped per key head; {@code qkvColumns} … gather them into the split order. A GGUF file of
     * Qwen3.5 (llama.cpp's converter) stores the value heads tiled (head m·Hk + k for value m of key head k) rather
     * than grouped (k·r + m): then the split projections' outputs are gathered into grouped order by the same
     * arrays, the host-side kernel, A_log and dt_bias are permuted at load, and {@code outColumns} gathers the
     * grouped output back into the tiled order out_proj reads. Null arrays: no gather.
     */
    record DeltaNet(Weight qkv, Weight z, Weight b, Weight a, Weight qkvz, Weight ba, int[] qkvColumns, int[] zColumns,
                    int[] bColumns, int[] aColumns, int[] outColumns, Weight conv, Weight aLog, Weight dtBias, Weight norm,
                    Weight out) implements Mixer {

    }

    /** Attention; with an output gate, wq's rows hold per head the query's then the gate's headDim rows. */
    record Attention(Weight wq, Weight wk, Weight wv, Weight wo, Weight qNorm, Weight kNorm) implements Mixer {}

    sealed interface FeedForward permits Dense, Sparse {}

    record Dense(Weight gate, Weight up, Weight down) implements FeedForward {}

    /** The experts, and optionally a shared expert whose output is scaled by sigmoid(x · sharedGateᵀ). */
    record Sparse(ExpertWeights experts, Dense shared, Weight sharedGate) implements FeedForward {}

    /**
     * Every weight a hybrid of {@code c} may have, with the shapes the layouts it is read from give it (GGML order):
     * the one table of names and shapes that loading checks and that the converter checks a Hugging Face folder
     * against ({@link HfLayout#weights}). Where layouts name a part differently, the weight the Hugging Face layout
     * has is required and lists the others as {@code instead}: split Gated DeltaNet projections (Qwen3-Next's fused
     * {@code ssm_in}, {@code ssm_ba}), {@code ssm_a_log} (GGUF's {@code ssm_a}), {@code ffn_norm} (GGUF's
     * {@code post_attention_norm}), stacked experts (mlx-lm's split gate and up, one tensor per expert).
     */
    static List<ExpectedWeight> expected(ModelConfig c) {
        long d = c.dim(), vocab = c.vocabSize();
        List<ExpectedWeight> out = new ArrayList<>();
        out.add(one("token_embd.weight", true, d, vocab));
        for (int i = 0; i < c.layers(); i++) {
            String p = "blk." + i + ".";
            out.add(one(p + "attn_norm.weight", true, d));
            if (c.isLinear(i)) {
                LinearAttention la = c.linear();
                long hv = la.valueHeads(), channels = la.convChannels(), value = hv * la.valueDim(), k = la.convKernel();
                List<String> fused = List.of(p + "ssm_in.weight"), fusedBa = List.of(p + "ssm_ba.weight");
                out.add(new ExpectedWeight(p + "attn_qkv.weight", shapes(new long[]{d, channels}), true, fused));
                out.add(new ExpectedWeight(p + "attn_gate.weight", shapes(new long[]{d, value}), true, fused));
                out.add(one(p + "ssm_in.weight", false, d, channels + value));
                out.add(new ExpectedWeight(p + "ssm_beta.weight", shapes(new long[]{d, hv}), true, fusedBa));
                out.add(new ExpectedWeight(p + "ssm_alpha.weight", shapes(new long[]{d, hv}), true, fusedBa));
                out.add(one(p + "ssm_ba.weight", false, d, 2 * hv));
                // Hugging Face [C, 1, K], mlx-lm [C, K, 1], GGUF [C, K] (row-major)
                out.add(new ExpectedWeight(p + "ssm_conv1d.weight", shapes(new long[]{k, 1, channels}, new long[]{1, k, channels},
                        new long[]{k, channels}), true, List.of()));
                out.add(one(p + "ssm_dt.bias", true, hv));
                out.add(new ExpectedWeight(p + "ssm_a_log", shapes(new long[]{hv}), true, List.of(p + "ssm_a")));
                out.add(one(p + "ssm_a", false, hv));
                out.add(one(p + "ssm_norm.weight", true, la.valueDim()));
                out.add(one(p + "ssm_out.weight", true, value, d));
            } else {
                long q = (long) c.heads() * c.headDim(), kv = c.kvDim();
                out.add(one(p + "attn_q.weight", true, d, c.gatedAttention() ? 2 * q : q));
                out.add(one(p + "attn_k.weight", true, d, kv));
                out.add(one(p + "attn_v.weight", true, d, kv));
                out.add(one(p + "attn_output.weight", true, q, d));
                out.add(one(p + "attn_q_norm.weight", true, c.headDim()));
                out.add(one(p + "attn_k_norm.weight", true, c.headDim()));
            }
            out.add(new ExpectedWeight(p + "ffn_norm.weight", shapes(new long[]{d}), true, List.of(p + "post_attention_norm.weight")));
            out.add(one(p + "post_attention_norm.weight", false, d));
            Experts e = c.experts();
            if (e != null && e.isSparse(i)) {
                long n = e.count(), ffn = e.ffnDim();
                out.add(one(p + "ffn_gate_inp.weight", true, d, n));
                // stacked [E, rows, cols] (row-major), or flattened [E·rows, cols] as a quantised module reads
                out.add(new ExpectedWeight(p + "ffn_gate_up_exps.weight", shapes(new long[]{d, 2 * ffn, n}, new long[]{d, 2 * ffn * n}), true,
                        List.of(p + "ffn_gate_exps.weight", p + "ffn_gate_exps.0.weight")));
                out.add(new ExpectedWeight(p + "ffn_gate_exps.weight", shapes(new long[]{d, ffn, n}, new long[]{d, ffn * n}), false, List.of()));
                out.add(new ExpectedWeight(p + "ffn_up_exps.weight", shapes(new long[]{d, ffn, n}, new long[]{d, ffn * n}), false, List.of()));
                out.add(new ExpectedWeight(p + "ffn_down_exps.weight", shapes(new long[]{ffn, d, n}, new long[]{ffn, d * n}), true,
                        List.of(p + "ffn_down_exps.0.weight")));
                for (int x = 0; x < n; x++) {   // Hugging Face's one tensor per expert
                    out.add(one(p + "ffn_gate_exps." + x + ".weight", false, d, ffn));
                    out.add(one(p + "ffn_up_exps." + x + ".weight", false, d, ffn));
                    out.add(one(p + "ffn_down_exps." + x + ".weight", false, ffn, d));
                }
                if (e.sharedFfnDim() > 0) {
                    long s = e.sharedFfnDim();
                    out.add(one(p + "ffn_gate_shexp.weight", true, d, s));
                    out.add(one(p + "ffn_up_shexp.weight", true, d, s));
                    out.add(one(p + "ffn_down_shexp.weight", true, s, d));
                    // GGUF: a vector; Hugging Face [1, H]
                    out.add(new ExpectedWeight(p + "ffn_gate_inp_shexp.weight", shapes(new long[]{d}, new long[]{d, 1}), true, List.of()));
                }
            } else {
                long ffn = c.ffnDim();
                out.add(one(p + "ffn_gate.weight", true, d, ffn));
                out.add(one(p + "ffn_up.weight", true, d, ffn));
                out.add(one(p + "ffn_down.weight", true, ffn, d));
            }
        }
        out.add(one("output_norm.weight", true, d));
        out.add(one("output.weight", false, d, vocab));   // absent: tied to the embeddings
        return out;
    }

    private static ExpectedWeight one(String name, boolean required, long... shape) {
        return new ExpectedWeight(name, shape, required);
    }

    private static List<long[]> shapes(long[]... shapes) { return List.of(shapes); }

    static HybridWeights load(ModelTensors f, Backend b, ModelConfig c, boolean zeroCentredNorms, IntConsumer tensorLoaded) {
        var l = new Loader(f, b, c, tensorLoaded);
        String lastLayer = "blk." + (c.layers() - 1) + ".attn_norm.weight";
        if (f.shape(lastLayer).isEmpty()) {
            throw new ModelFormatException(f.path(), "tensor " + lastLayer, "missing: the model declares " + c.layers()
                    + " layers (block_count / num_hidden_layers)");
        }
        boolean shift = zeroCentredNorms && rawHfNorms(f, c);
        Weight embd = l.get("token_embd.weight");
        Layer[] layers = new Layer[c.layers()];
        for (int i = 0; i < layers.length; i++) {
            String p = "blk." + i + ".";
            Weight attnNorm = l.norm(p + "attn_norm.weight", shift);
            Mixer mixer = c.isLinear(i) ? deltaNet(l, p, c) : attention(l, p, c, shift);
            String ffnNormName = f.shape(p + "ffn_norm.weight").isPresent() ? p + "ffn_norm.weight" : p + "post_attention_norm.weight";
            Weight ffnNorm = l.norm(ffnNormName, shift);
            FeedForward ffn = c.experts() != null && c.experts().isSparse(i) ? sparse(l, p, c) : dense(l, p, "");
            layers[i] = new Layer(attnNorm, mixer, ffnNorm, ffn);
        }
        Weight norm = l.norm("output_norm.weight", shift);
        Weight output = f.shape("output.weight").isPresent() ? l.get("output.weight") : embd;
        return new HybridWeights(embd, layers, norm, output);
    }

    /** Hugging Face's raw checkpoints: the first convolution kernel still [C, 1, K] (GGML order [K, 1, C], K > 1). */
    private static boolean rawHfNorms(ModelTensors f, ModelConfig c) {
        for (int i = 0; i < c.layers(); i++) {
            if (!c.isLinear(i)) continue;
            long[] s = f.shape("blk." + i + ".ssm_conv1d.weight").orElse(null);
            return s != null && s.length == 3 && s[0] != 1;
        }
        return true;   // no linear layer: zero-centred norms as Hugging Face stores them
    }

    private static DeltaNet deltaNet(Loader l, String p, ModelConfig c) {
        LinearAttention la = c.linear();
        int hk = la.keyHeads(), hv = la.valueHeads(), dk = la.keyDim(), dv = la.valueDim(), r = hv / hk;
        int channels = la.convChannels(), value = hv * dv;
        Weight qkv = null, z = null, b = null, a = null, qkvz = null, ba = null;
        int[] qkvCols = null, zCols = null, bCols = null, aCols = null;
        if (l.f.shape(p + "attn_qkv.weight").isPresent()) {   // split q ‖ k ‖ v and z (Qwen3.5; llama.cpp's Qwen3-Next)
            qkv = l.get(p + "attn_qkv.weight");
            z = l.get(p + "attn_gate.weight");
        } else {   // Qwen3-Next: per key head [q(dk) k(dk) v(r·dv) z(r·dv)]
            qkvz = l.get(p + "ssm_in.weight");
            int block = 2 * dk + 2 * r * dv;
            qkvCols = new int[channels];
            zCols = new int[value];
            int o = 0;
            for (int h = 0; h < hk; h++) for (int i = 0; i < dk; i++) qkvCols[o++] = h * block + i;
            for (int h = 0; h < hk; h++) for (int i = 0; i < dk; i++) qkvCols[o++] = h * block + dk + i;
            for (int h = 0; h < hk; h++) for (int i = 0; i < r * dv; i++) qkvCols[o++] = h * block + 2 * dk + i;
            for (int h = 0, zo = 0; h < hk; h++) for (int i = 0; i < r * dv; i++) zCols[zo++] = h * block + 2 * dk + r * dv + i;
        }
        if (l.f.shape(p + "ssm_beta.weight").isPresent()) {
            b = l.get(p + "ssm_beta.weight");
            a = l.get(p + "ssm_alpha.weight");
        } else {   // Qwen3-Next: per key head [b(r) a(r)]
            ba = l.get(p + "ssm_ba.weight");
            bCols = new int[hv];
            aCols = new int[hv];
            for (int h = 0, o2 = 0; h < hk; h++) {
                for (int j = 0; j < r; j++, o2++) {
                    bCols[o2] = h * 2 * r + j;
                    aCols[o2] = h * 2 * r + r + j;
                }
            }
        }
        int[] outCols = null;
        float[] kernel = l.floats(p + "ssm_conv1d.weight");
        float[] dt = l.floats(p + "ssm_dt.bias");
        float[] aLog;
        if (l.f.shape(p + "ssm_a_log").isPresent()) {
            aLog = l.floats(p + "ssm_a_log");
        } else {
            float[] negA = l.floats(p + "ssm_a");   // llama.cpp: −exp(A_log)
            aLog = new float[hv];
            for (int j = 0; j < hv; j++) {
                if (!(negA[j] < 0)) throw new ModelFormatException(l.f.path(), "tensor " + p + "ssm_a", "element " + j + " is " + negA[j] + ", expected −exp(A_log) < 0");
                aLog[j] = (float) Math.log(-(double) negA[j]);
            }
        }
        if (qkvz == null && ba == null && tiledValueHeads(l.f, c)) {
            int[] tiled = new int[hv];   // grouped head j = k·r + m is stored as m·Hk + k
            for (int k = 0; k < hk; k++) for (int m = 0; m < r; m++) tiled[k * r + m] = m * hk + k;
            int qk = 2 * hk * dk, kk = la.convKernel();
            qkvCols = new int[channels];
            zCols = new int[value];
            bCols = new int[hv];
            aCols = new int[hv];
            outCols = new int[value];
            float[] grouped = kernel.clone(), aGrouped = aLog.clone(), dtGrouped = dt.clone();
            for (int i = 0; i < qk; i++) qkvCols[i] = i;
            for (int j = 0; j < hv; j++) {
                bCols[j] = aCols[j] = tiled[j];
                aGrouped[j] = aLog[tiled[j]];
                dtGrouped[j] = dt[tiled[j]];
                for (int d = 0; d < dv; d++) {
                    qkvCols[qk + j * dv + d] = qk + tiled[j] * dv + d;
                    zCols[j * dv + d] = tiled[j] * dv + d;
                    outCols[tiled[j] * dv + d] = j * dv + d;
                    System.arraycopy(kernel, (qk + tiled[j] * dv + d) * kk, grouped, (qk + j * dv + d) * kk, kk);
                }
            }
            kernel = grouped;
            aLog = aGrouped;
            dt = dtGrouped;
        }
        Weight conv = l.host(p + "ssm_conv1d.weight", kernel, channels, la.convKernel());
        Weight aLogW = l.host(p + "ssm_a_log", aLog, 1, hv);
        Weight dtBias = l.host(p + "ssm_dt.bias", dt, 1, hv);
        Weight norm = l.get(p + "ssm_norm.weight");
        Weight out = l.get(p + "ssm_out.weight");
        return new DeltaNet(qkv, z, b, a, qkvz, ba, qkvCols, zCols, bCols, aCols, outCols, conv, aLogW, dtBias, norm, out);
    }

    /**
     * llama.cpp's GGUF files of some hybrids ({@link Architecture.Spec#ggufTiledValueHeads()}: Qwen3.5, not Qwen3-Next)
     * with more value than key heads store the value heads tiled; a file whose {@code ssm.v_head_reordered} is false
     * keeps them grouped.
     */
    private static boolean tiledValueHeads(ModelTensors f, ModelConfig c) {
        boolean tiled = Architectures.find(c.architecture()).map(Architecture.Spec::ggufTiledValueHeads).orElse(false);
        if (!(f instanceof GgufTensors g) || !tiled || c.linear().valueHeads() == c.linear().keyHeads()) return false;
        // Ollama's converter says so in ssm.v_head_reordered; llama.cpp's always reorders and writes no key
        return g.file().getBool(c.architecture() + ".ssm.v_head_reordered", true);
    }

    private static Attention attention(Loader l, String p, ModelConfig c, boolean shift) {
        int q = c.heads() * c.headDim(), kv = c.kvDim();
        return new Attention(
                l.get(p + "attn_q.weight"),
                l.get(p + "attn_k.weight"),
                l.get(p + "attn_v.weight"),
                l.get(p + "attn_output.weight"),
                l.norm(p + "attn_q_norm.weight", shift),
                l.norm(p + "attn_k_norm.weight", shift));
    }

    private static Dense dense(Loader l, String p, String suffix) {
        return new Dense(l.get(p + "ffn_gate" + suffix + ".weight"), l.get(p + "ffn_up" + suffix + ".weight"),
                l.get(p + "ffn_down" + suffix + ".weight"));
    }

    private static Sparse sparse(Loader l, String p, ModelConfig c) {
        Experts e = c.experts();
        int n = e.count(), ffn = e.ffnDim(), dim = c.dim();
        Weight router = l.get(p + "ffn_gate_inp.weight");
        ExpertWeights.ExpertRows gate, up;
        if (l.f.shape(p + "ffn_gate_up_exps.weight").isPresent()) {
            Weight gateUp = l.get(p + "ffn_gate_up_exps.weight");
            gate = new ExpertWeights.ExpertRows(gateUp, 2 * ffn, 0, ffn);
            up = new ExpertWeights.ExpertRows(gateUp, 2 * ffn, ffn, ffn);
        } else if (l.f.shape(p + "ffn_gate_exps.weight").isPresent()) {
            gate = new ExpertWeights.ExpertRows(l.get(p + "ffn_gate_exps.weight"), ffn, 0, ffn);
            up = new ExpertWeights.ExpertRows(l.get(p + "ffn_up_exps.weight"), ffn, 0, ffn);
        } else {   // one tensor per expert (Hugging Face's experts.{e}.gate_proj …)
            gate = perExpert(l, p + "ffn_gate_exps.", n);
            up = perExpert(l, p + "ffn_up_exps.", n);
        }
        var down = l.f.shape(p + "ffn_down_exps.weight").isPresent() || !l.f.shape(p + "ffn_down_exps.0.weight").isPresent()
                ? new ExpertWeights.ExpertRows(l.get(p + "ffn_down_exps.weight"), dim, 0, dim)
                : perExpert(l, p + "ffn_down_exps.", n);
        ExpertWeights experts = new ExpertWeights(router, gate, up, down, n, e.topK(), e.renormalize());
        Dense shared = null;
        Weight sharedGate = null;
        if (e.sharedFfnDim() > 0) {
            shared = dense(l, p, "_shexp");
            String g = p + "ffn_gate_inp_shexp.weight";
            long[] shape = l.shape(g);   // GGUF: a vector {H}; HF [1, H]; mlx-lm quantises it (8 bits)
            sharedGate = shape.length == 1 ? l.host(g, l.floats(g), 1, dim) : l.get(g);
        }
        return new Sparse(experts, shared, sharedGate);
    }

    private static ExpertWeights.ExpertRows perExpert(Loader l, String prefix, int experts) {
        Weight[] w = new Weight[experts];
        for (int e = 0; e < experts; e++) w[e] = l.get(prefix + e + ".weight");
        return ExpertWeights.ExpertRows.of(w);
    }

    /** Loads tensors checked against {@link #expected}, counting them for progress. */
    private static final class Loader {
        final ModelTensors f;
        final Backend b;
        final IntConsumer tensorLoaded;
        final Map<String, ExpectedWeight> table = new HashMap<>();
        int loaded;

        Loader(ModelTensors f, Backend b, ModelConfig c, IntConsumer tensorLoaded) {
            this.f = f;
            this.b = b;
            this.tensorLoaded = tensorLoaded;
            for (ExpectedWeight e : expected(c)) table.put(e.name(), e);
        }

        long[] shape(String name) {
            return f.shape(name).orElseThrow(() -> new ModelFormatException(f.path(), "tensor " + name, "missing"));
        }

        /** The shape of {@code name}, which must be there and have one of the shapes {@link #expected} gives it. */
        private long[] checked(String name) {
            ExpectedWeight e = table.get(name);
            if (e == null) throw new IllegalStateException(name + " is not in the hybrid's weight table");
            long[] actual = shape(name);
            if (!e.fits(actual)) {
                throw new ModelFormatException(f.path(), "tensor " + name, "shape " + Arrays.toString(actual) + ", expected " + e.shapesString());
            }
            return actual;
        }

        Weight get(String name) {
            checked(name);
            return counted(f.weight(name, b));
        }

        float[] floats(String name) {
            long count = 1;
            for (long d : checked(name)) count *= d;
            float[] v = f.floats(name);
            if (v.length != count) throw new ModelFormatException(f.path(), "tensor " + name, v.length + " values, expected " + count);
            return v;
        }

        /** A norm weight, plus 1 when the tensor holds Qwen3.5's zero-centred form. */
        Weight norm(String name, boolean shift) {
            if (!shift) return get(name);
            float[] v = floats(name);
            for (int i = 0; i < v.length; i++) v[i] += 1f;
            return host(name, v, 1, v.length);
        }

        Weight host(String name, float[] values, int rows, int cols) {
            return counted(b.weight(new HostMatrix(name, values, rows, cols)));
        }

        private Weight counted(Weight w) {
            tensorLoaded.accept(++loaded);
            return w;
        }
    }
}
