package dev.forkpoint.metal;

/**
 * The pass-2 dispatch (the reduction over blocks): one threadgroup of {@code threadgroup} = (SIMD width,
 * {@code simdGroups}, 1) threads per (head, row) pair, a grid of {@code gqa × queryRows × kvHeads} threadgroups. Every
 * SIMD group reduces the statistics itself: lane {@code l} reads blocks {@code l, l + simdWidth, …}
 * ({@code blocksPerLane} of them) and a SIMD max and SIMD sum give the global max and the sum of exponentials. SIMD
 * group {@code w} then adds blocks {@code w, w + simdGroups, …} ({@code blocksPerSimdGroup}) of
 * {@code exp(m_b − max)·o_b} into its row of threadgroup memory ({@code simdGroups × headDim} f32), and the rows are
 * summed and divided by the sum. So the kernel needs {@code blocks} to be a multiple of both the SIMD width and
 * {@code simdGroups}.
 */
public record Pass2Dispatch(ThreadgroupSize threadgroup, int simdGroups, int blocksPerLane, int blocksPerSimdGroup,
                            int threadgroupMemoryBytes) {

    public int threads() {
        return threadgroup.threads();
    }
}
