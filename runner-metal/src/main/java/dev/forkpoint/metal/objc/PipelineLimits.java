package dev.forkpoint.metal.objc;

import dev.forkpoint.metal.GpuLimits;

/**
 * What a compiled Metal compute pipeline allows: {@code maxTotalThreadsPerThreadgroup}, {@code threadExecutionWidth}
 * (the SIMD width), the threadgroup memory its source declares statically, and the device's threadgroup memory.
 */
public record PipelineLimits(String function, int maxTotalThreadsPerThreadgroup, int threadExecutionWidth,
                             int staticThreadgroupMemoryBytes, int deviceThreadgroupMemoryBytes) {

    /** As the planner takes them. */
    public GpuLimits gpuLimits() {
        return new GpuLimits(maxTotalThreadsPerThreadgroup, threadExecutionWidth, deviceThreadgroupMemoryBytes);
    }
}
