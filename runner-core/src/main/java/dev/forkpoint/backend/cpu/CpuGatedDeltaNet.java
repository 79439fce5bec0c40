package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Segment;

import java.util.List;

/** The Gated DeltaNet kernels on the CPU: the causal convolution with its carried window and the gated delta rule. */
final class CpuGatedDeltaNet {
    private CpuGatedDeltaNet() {}

    static CpuActivation causalConv1dSilu(CpuActivation x, CpuWeight kernel, List<Segment> segments, int layer, WorkerPool pool) {
        throw new UnsupportedOperationException("causal conv1d: not implemented yet");
    }

    static CpuActivation gatedDeltaRule(CpuActivation q, CpuActivation k, CpuActivation v, CpuActivation a, CpuActivation b,
                                        float[] aLog, float[] dtBias, List<Segment> segments, int layer, int keyHeads,
                                        int valueHeads, int keyDim, int valueDim, WorkerPool pool) {
        throw new UnsupportedOperationException("gated delta rule: not implemented yet");
    }
}
