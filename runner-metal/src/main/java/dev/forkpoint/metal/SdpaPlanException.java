package dev.forkpoint.metal;

/** No SDPA decode plan exists for these limits and this shape; the message names both and why. */
public final class SdpaPlanException extends RuntimeException {

    /** Why no plan exists. */
    public enum Reason {
        /** Not even one SIMD group fits in a threadgroup. */
        LIMIT_BELOW_SIMD_WIDTH,
        /** Not even one key and value (pass 1) or one output row (pass 2) fits in threadgroup memory. */
        THREADGROUP_MEMORY_TOO_SMALL
    }

    private final Reason reason;
    private final GpuLimits limits;
    private final SdpaShape shape;

    SdpaPlanException(Reason reason, GpuLimits limits, SdpaShape shape, String why) {
        super("no SDPA decode plan: " + why + " (limits: " + limits + "; shape: " + shape + ")");
        this.reason = reason;
        this.limits = limits;
        this.shape = shape;
    }

    public Reason reason() {
        return reason;
    }

    public GpuLimits limits() {
        return limits;
    }

    public SdpaShape shape() {
        return shape;
    }
}
