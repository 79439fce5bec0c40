package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.ExpertWeights;

/** The mixture-of-experts feed-forward on the CPU: routing, then each chosen expert's rows only. */
final class CpuMoe {
    private CpuMoe() {}

    static CpuActivation forward(CpuActivation x, ExpertWeights experts, WorkerPool pool) {
        throw new UnsupportedOperationException("mixture of experts: not implemented yet");
    }
}
