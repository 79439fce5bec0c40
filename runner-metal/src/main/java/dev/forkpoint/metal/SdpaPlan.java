package dev.forkpoint.metal;

import java.util.List;

/**
 * How one decode-shaped attention call runs as a two-pass split-K kernel within a pipeline's limits: pass 1 splits
 * the keys into {@code blocks} blocks of {@code keysPerBlock} keys (the last {@code blocks − nonEmptyBlocks} are
 * empty) and runs as one or more dispatches, each over a tile of the (head, row) pairs; pass 2 reduces the blocks'
 * partials per pair. Together the pass-1 tiles cover every (head, row) pair of the GQA group exactly once. All
 * counts are per KV head: the caller's grids add the KV heads (and sequences) as their z dimension.
 */
public record SdpaPlan(GpuLimits limits, SdpaShape shape, int blocks, int keysPerBlock, int nonEmptyBlocks,
                       List<Pass1Dispatch> pass1, Pass2Dispatch pass2) {

    public SdpaPlan {
        pass1 = List.copyOf(pass1);
    }

    /** The most threads any threadgroup of this plan launches (at most the pipeline's limit). */
    public int maxThreadsPerThreadgroup() {
        int max = pass2.threads();
        for (Pass1Dispatch d : pass1) {
            max = Math.max(max, d.threads());
        }
        return max;
    }

    /** Query rows per pass-1 dispatch at most: what caps a speculative-verify width at one dispatch. */
    public int maxRowsPerDispatch() {
        return pass1.stream().mapToInt(d -> d.tile().rows()).max().orElseThrow();
    }

    /** f32 values of the partials pass 1 writes and pass 2 reads, per KV head: (max, sum, output) per pair and block. */
    public long partialFloats() {
        return (long) shape.pairs() * blocks * (shape.headDim() + 2L);
    }

    /** The same shape planned again under another thread limit (one MLX reported, or a remembered one). */
    public SdpaPlan replan(int maxThreadsPerThreadgroup) {
        return SdpaPlanner.plan(limits.withMaxThreadsPerThreadgroup(maxThreadsPerThreadgroup), shape);
    }
}
