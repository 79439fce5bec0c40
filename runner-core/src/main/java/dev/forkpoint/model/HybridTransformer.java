package dev.forkpoint.model;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;

import java.util.List;

/**
 * The Qwen3.5 family's decoder (Qwen3.5, Qwen3.5-MoE, Qwen3-Next) and Qwen3-MoE: pre-norm blocks whose mixer is
 * either Gated DeltaNet (linear attention with a recurrent state per sequence) or grouped-query attention (per-head
 * q/k RMSNorm, partial NeoX RoPE, optionally a sigmoid output gate), and whose feed-forward is either SwiGLU or a
 * mixture of SwiGLU experts with an optional gated shared expert. Reads top to bottom: one token's path through a
 * layer is {@link #deltaNet} or {@link #attention}, then {@link #feedForward}.
 */
record HybridTransformer(ModelConfig config, HybridWeights weights) implements Architecture {

    public Activation forward(Ops ops, List<Segment> segments) {
        ModelConfig c = config;
        int[] tokens = Segment.tokens(segments), positions = Segment.positions(segments);
        Activation x = ops.embed(weights.tokenEmbedding(), tokens);
        for (int l = 0; l < c.layers(); l++) {
            HybridWeights.Layer w = weights.layers()[l];
            Activation h = ops.rmsNorm(x, w.attnNorm(), c.rmsEps());
            Activation mixed = switch (w.mixer()) {
                case HybridWeights.DeltaNet d -> deltaNet(ops, h, d, segments, c.linear().indexAmongKind(l));
                case HybridWeights.Attention a -> attention(ops, h, a, segments, positions, c.kvLayer(l));
            };
            x = ops.add(x, mixed);
            h = ops.rmsNorm(x, w.ffnNorm(), c.rmsEps());
            x = ops.add(x, feedForward(ops, h, w.ffn()));
        }
        return ops.rmsNorm(x, weights.outputNorm(), c.rmsEps());
    }

    public Weight output() { return weights.output(); }

    /** Gated DeltaNet: conv1d + SiLU over q‖k‖v, l2-normalised q/k, the gated delta rule, gated RMSNorm, out. */
    private Activation deltaNet(Ops ops, Activation h, HybridWeights.DeltaNet d, List<Segment> segments, int layer) {
        LinearAttention la = config.linear();
        int hk = la.keyHeads(), hv = la.valueHeads(), dk = la.keyDim(), dv = la.valueDim();
        Activation qkv, z, b, a;
        if (d.qkvz() != null) {   // one fused projection, gathered into q ‖ k ‖ v and z
            Activation qkvz = ops.matmul(h, d.qkvz());
            qkv = ops.columns(qkvz, d.qkvColumns());
            z = ops.columns(qkvz, d.zColumns());
        } else {
            qkv = gather(ops, ops.matmul(h, d.qkv()), d.qkvColumns());
            z = gather(ops, ops.matmul(h, d.z()), d.zColumns());
        }
        if (d.ba() != null) {
            Activation ba = ops.matmul(h, d.ba());
            b = ops.columns(ba, d.bColumns());
            a = ops.columns(ba, d.aColumns());
        } else {
            b = gather(ops, ops.matmul(h, d.b()), d.bColumns());
            a = gather(ops, ops.matmul(h, d.a()), d.aColumns());
        }
        Activation conv = ops.causalConv1dSilu(qkv, d.conv(), segments, layer);
        Activation q = ops.l2NormHeads(ops.columns(conv, range(0, hk * dk)), dk, L2_EPS, (float) (1 / Math.sqrt(dk)));
        Activation k = ops.l2NormHeads(ops.columns(conv, range(hk * dk, hk * dk)), dk, L2_EPS, 1f);
        Activation v = ops.columns(conv, range(2 * hk * dk, hv * dv));
        Activation o = ops.gatedDeltaRule(q, k, v, a, b, d.aLog(), d.dtBias(), segments, layer, hk, hv, dk, dv);
        o = ops.gatedRmsNorm(o, z, d.norm(), dv, config.rmsEps());
        return ops.matmul(gather(ops, o, d.outColumns()), d.out());
    }

    private static Activation gather(Ops ops, Activation x, int[] columns) {
        return columns == null ? x : ops.columns(x, columns);
    }

    /** Gated DeltaNet's q/k normalisation: eps added to the sum of squares (Hugging Face's l2norm). */
    static final float L2_EPS = 1e-6f;

    /** Attention with per-head q/k norms before RoPE and, for the hybrids, a sigmoid gate on its output. */
    private Activation attention(Ops ops, Activation h, HybridWeights.Attention w, List<Segment> segments, int[] positions, int kvLayer) {
        ModelConfig c = config;
        int hd = c.headDim(), heads = c.heads();
        Activation q = ops.matmul(h, w.wq()), gate = null;
        if (c.gatedAttention()) {
            Activation qg = q;
            q = ops.columns(qg, interleaved(heads, hd, 0));
            gate = ops.columns(qg, interleaved(heads, hd, hd));
        }
        Activation k = ops.matmul(h, w.wk()), v = ops.matmul(h, w.wv());
        q = ops.rope(ops.rmsNormHeads(q, w.qNorm(), hd, c.rmsEps()), hd, positions, c.rope());
        k = ops.rope(ops.rmsNormHeads(k, w.kNorm(), hd, c.rmsEps()), hd, positions, c.rope());
        Activation out = ops.attention(q, k, v, segments, kvLayer, heads, c.kvHeads(), hd);
        if (gate != null) out = ops.sigmoidGate(out, gate);
        return ops.matmul(out, w.wo());
    }

    private static Activation feedForward(Ops ops, Activation h, HybridWeights.FeedForward ffn) {
        return switch (ffn) {
            case HybridWeights.Dense d -> dense(ops, h, d);
            case HybridWeights.Sparse s -> {
                Activation y = ops.moe(h, s.experts());
                if (s.shared() != null) y = ops.add(y, ops.sigmoidGate(dense(ops, h, s.shared()), ops.matmul(h, s.sharedGate())));
                yield y;
            }
        };
    }

    private static Activation dense(Ops ops, Activation h, HybridWeights.Dense d) {
        return ops.matmul(ops.swiglu(ops.matmul(h, d.gate()), ops.matmul(h, d.up())), d.down());
    }

    private static int[] range(int from, int n) {
        int[] r = new int[n];
        for (int i = 0; i < n; i++) r[i] = from + i;
        return r;
    }

    /** Per head h of 2·headDim columns, columns [offset, offset + headDim): the query's or the gate's half. */
    private static int[] interleaved(int heads, int headDim, int offset) {
        int[] r = new int[heads * headDim];
        for (int h = 0; h < heads; h++) for (int i = 0; i < headDim; i++) r[h * headDim + i] = h * 2 * headDim + offset + i;
        return r;
    }
}
