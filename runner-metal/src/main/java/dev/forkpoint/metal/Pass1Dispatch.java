package dev.forkpoint.metal;

/**
 * One pass-1 dispatch of the split-K decode kernel: the grid is {@code blocks × 1 × kvHeads} threadgroups of
 * {@code threadgroup} = (SIMD width, tile heads, tile rows) threads. Threadgroup {@code b} reads keys
 * {@code [b·keysPerBlock, min(keyLength, (b+1)·keysPerBlock))}, {@code keyTile} keys (and values) at a time through
 * threadgroup memory, and each of its SIMD groups writes, for its (head, row) pair, the block's partial softmax
 * statistics (max, sum of exponentials) and its unnormalised output (head dim floats, f32). Lane {@code l} holds the
 * elements {@code l + simdWidth·j}, {@code j < elementsPerLane}, that are below the head dim. An empty block (more
 * blocks than keys) writes the neutral partial (−∞, 0, 0).
 */
public record Pass1Dispatch(PairTile tile, ThreadgroupSize threadgroup, int blocks, int keysPerBlock, int keyTile,
                            int elementsPerLane, int threadgroupMemoryBytes) {

    public int threads() {
        return threadgroup.threads();
    }
}
