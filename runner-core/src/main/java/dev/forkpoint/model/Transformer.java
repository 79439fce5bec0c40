package dev.forkpoint.model;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;

import java.util.List;

/**
 * The decoder-only transformer that Llama, Qwen2 and Qwen3 share: pre-norm blocks of grouped-query attention with
 * RoPE and a SwiGLU feed-forward, then a final RMSNorm. The optional parts (q/k/v biases, per-head q/k norms) are
 * used when the weights have them.
 */
record Transformer(ModelConfig config, ModelWeights weights) implements Architecture {

    public Activation forward(Ops ops, List<Segment> segments) {
        ModelConfig c = config;
        int[] tokens = Segment.tokens(segments), positions = Segment.positions(segments);

        Activation x = ops.embed(weights.tokenEmbedding(), tokens);
        for (int l = 0; l < c.layers(); l++) {
            LayerWeights w = weights.layers()[l];
            Activation h = ops.rmsNorm(x, w.attnNorm(), c.rmsEps());
            Activation q = withBias(ops, ops.matmul(h, w.wq()), w.qBias());
            Activation k = withBias(ops, ops.matmul(h, w.wk()), w.kBias());
            Activation v = withBias(ops, ops.matmul(h, w.wv()), w.vBias());
            if (w.qNorm() != null) {
                q = ops.rmsNormHeads(q, w.qNorm(), c.headDim(), c.rmsEps());
                k = ops.rmsNormHeads(k, w.kNorm(), c.headDim(), c.rmsEps());
            }
            q = ops.rope(q, c.headDim(), positions, c.rope());
            k = ops.rope(k, c.headDim(), positions, c.rope());
            Activation a = ops.attention(q, k, v, segments, l, c.heads(), c.kvHeads(), c.headDim());
            x = ops.add(x, ops.matmul(a, w.wo()));

            h = ops.rmsNorm(x, w.ffnNorm(), c.rmsEps());
            Activation ffn = ops.swiglu(ops.matmul(h, w.gate()), ops.matmul(h, w.up()));
            x = ops.add(x, ops.matmul(ffn, w.down()));
        }
        return ops.rmsNorm(x, weights.outputNorm(), c.rmsEps());
    }

    public Weight output() { return weights.output(); }

    private static Activation withBias(Ops ops, Activation x, Weight bias) {
        return bias == null ? x : ops.addBias(x, bias);
    }
}
