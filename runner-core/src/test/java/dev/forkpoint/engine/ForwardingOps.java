package dev.forkpoint.engine;

import dev.forkpoint.backend.Activation;
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
    public float[][] logits(Activation x, Weight output) { return delegate.logits(x, output); }
}
