package dev.forkpoint.engine;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.ExpertWeights;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.Segment;
import dev.forkpoint.backend.Weight;

import java.util.List;

/** Ops that pass every call to real ones; test decorators override only what they change. */
abstract class ForwardingOps implements Ops {
    protected final Ops delegate;

    ForwardingOps(Ops delegate) { this.delegate = delegate; }

    public Activation embed(Weight table, int[] tokens) { return delegate.embed(table, tokens); }
    public Activation rmsNorm(Activation x, Weight gamma, float eps) { return delegate.rmsNorm(x, gamma, eps); }
    public Activation rmsNormHeads(Activation x, Weight gamma, int headDim, float eps) { return delegate.rmsNormHeads(x, gamma, headDim, eps); }
    public Activation matmul(Activation x, Weight w) { return delegate.matmul(x, w); }
    public Activation addBias(Activation x, Weight bias) { return delegate.addBias(x, bias); }
    public Activation rope(Activation x, int headDim, int[] positions, Rope rope) { return delegate.rope(x, headDim, positions, rope); }
    public Activation attention(Activation q, Activation k, Activation v, List<Segment> segments, int layer,
                                int heads, int kvHeads, int headDim) {
        return delegate.attention(q, k, v, segments, layer, heads, kvHeads, headDim);
    }
    public Activation swiglu(Activation gate, Activation up) { return delegate.swiglu(gate, up); }
    public Activation add(Activation a, Activation b) { return delegate.add(a, b); }
    public Activation rows(Activation x, int[] rows) { return delegate.rows(x, rows); }
    public Activation columns(Activation x, int[] columns) { return delegate.columns(x, columns); }
    public Activation causalConv1dSilu(Activation x, Weight kernel, List<Segment> segments, int layer) {
        return delegate.causalConv1dSilu(x, kernel, segments, layer);
    }
    public Activation l2NormHeads(Activation x, int headDim, float eps, float scale) { return delegate.l2NormHeads(x, headDim, eps, scale); }
    public Activation gatedDeltaRule(Activation q, Activation k, Activation v, Activation a, Activation b, Weight aLog,
                                     Weight dtBias, List<Segment> segments, int layer, int keyHeads, int valueHeads,
                                     int keyDim, int valueDim) {
        return delegate.gatedDeltaRule(q, k, v, a, b, aLog, dtBias, segments, layer, keyHeads, valueHeads, keyDim, valueDim);
    }
    public Activation gatedRmsNorm(Activation x, Activation z, Weight gamma, int headDim, float eps) {
        return delegate.gatedRmsNorm(x, z, gamma, headDim, eps);
    }
    public Activation sigmoidGate(Activation x, Activation gate) { return delegate.sigmoidGate(x, gate); }
    public Activation moe(Activation x, ExpertWeights experts) { return delegate.moe(x, experts); }
    public float[][] logits(Activation x, Weight output) { return delegate.logits(x, output); }
    public float[][] hidden(Activation x) { return delegate.hidden(x); }
}
