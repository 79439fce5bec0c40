package dev.forkpoint.metal;

/**
 * What one compiled Metal pipeline allows: its {@code maxTotalThreadsPerThreadgroup}, the SIMD width its threads are
 * grouped in ({@code threadExecutionWidth}) and the threadgroup memory a dispatch may use.
 *
 * <p>The thread limit is a property of the compiled pipeline, not of the device: a specialised kernel that uses many
 * registers gets less than the device's 1024 (896 for bf16 at head dim 256 on M1/M2, 832 at head dim 512; FACTS §1 A).
 * When the two SDPA passes are separate pipelines, pass the smaller of their two limits.
 */
public record GpuLimits(int maxThreadsPerThreadgroup, int simdWidth, int threadgroupMemoryBytes) {

    /** Apple GPUs: SIMD width 32 and 32 KiB of threadgroup memory (FACTS §3). */
    public static final int APPLE_SIMD_WIDTH = 32;
    public static final int APPLE_THREADGROUP_MEMORY = 32 * 1024;

    public GpuLimits {
        if (maxThreadsPerThreadgroup < 1 || simdWidth < 1 || threadgroupMemoryBytes < 1) {
            throw new IllegalArgumentException("GPU limits must be positive: max threads per threadgroup "
                    + maxThreadsPerThreadgroup + ", SIMD width " + simdWidth + ", threadgroup memory "
                    + threadgroupMemoryBytes + " bytes");
        }
    }

    /** An Apple GPU pipeline with the given thread limit. */
    public static GpuLimits apple(int maxThreadsPerThreadgroup) {
        return new GpuLimits(maxThreadsPerThreadgroup, APPLE_SIMD_WIDTH, APPLE_THREADGROUP_MEMORY);
    }

    /** The same pipeline with another thread limit (the one an MLX error reported, or a remembered one). */
    public GpuLimits withMaxThreadsPerThreadgroup(int limit) {
        return new GpuLimits(limit, simdWidth, threadgroupMemoryBytes);
    }

    @Override
    public String toString() {
        return "max " + maxThreadsPerThreadgroup + " threads per threadgroup, SIMD width " + simdWidth + ", "
                + threadgroupMemoryBytes + " bytes of threadgroup memory";
    }
}
