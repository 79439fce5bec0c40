package dev.forkpoint.engine;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Rope;
import dev.forkpoint.backend.Weight;

/**
 * Ops that delegate to real ones and throw {@link InjectedFault} on the k-th attention call after {@link #armAt(int)}
 * (counting from 1), once; the attention's own KV writes have not happened then, as when a backend kernel fails.
 */
final class FaultyOps implements Ops {
    static final class InjectedFault extends RuntimeException {
        InjectedFault(String message) { super(message); }
    }

    private final Ops delegate;
    private int countdown;   // 0 = disarmed
    private boolean afterWrites;
    private int attentionCalls;

    FaultyOps(Ops delegate) { this.delegate = delegate; }

    /**
     * Throws on the k-th attention call from now on (k ≥ 1): before it runs, or, with {@code afterWrites}, after it
     * has written that layer's K/V into the open step (a step failing half-way).
     */
    void armAt(int k, boolean afterWrites) {
        countdown = k;
        this.afterWrites = afterWrites;
        attentionCalls = 0;
    }

    void disarm() { countdown = 0; }

    int attentionCalls() { return attentionCalls; }

    public Activation attention(Activation q, Activation k, Activation v, KvStore kv, int layer, int startPos,
                                int heads, int kvHeads, int headDim) {
        attentionCalls++;
        boolean fire = countdown > 0 && --countdown == 0;
        if (fire && !afterWrites) throw fault(layer, startPos);
        Activation out = delegate.attention(q, k, v, kv, layer, startPos, heads, kvHeads, headDim);
        if (fire) throw fault(layer, startPos);
        return out;
    }

    private InjectedFault fault(int layer, int startPos) {
        return new InjectedFault("injected fault: attention call " + attentionCalls + " (layer " + layer + ", positions from " + startPos + ")");
    }

    public Activation embed(Weight table, int[] tokens) { return delegate.embed(table, tokens); }
    public Activation rmsNorm(Activation x, Weight gamma, float eps) { return delegate.rmsNorm(x, gamma, eps); }
    public Activation rmsNormHeads(Activation x, Weight gamma, int headDim, float eps) { return delegate.rmsNormHeads(x, gamma, headDim, eps); }
    public Activation matmul(Activation x, Weight w) { return delegate.matmul(x, w); }
    public Activation addBias(Activation x, Weight bias) { return delegate.addBias(x, bias); }
    public Activation rope(Activation x, int headDim, int[] positions, Rope rope) { return delegate.rope(x, headDim, positions, rope); }
    public Activation swiglu(Activation gate, Activation up) { return delegate.swiglu(gate, up); }
    public Activation add(Activation a, Activation b) { return delegate.add(a, b); }
    public Activation row(Activation x, int row) { return delegate.row(x, row); }
    public float[][] logits(Activation x, Weight output) { return delegate.logits(x, output); }
}
