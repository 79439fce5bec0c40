package dev.forkpoint.metal;

/** What {@link SdpaPlanner#replan} made of an MLX error after a dispatch failed. */
public sealed interface Replan {

    /** MLX reported a lower limit; {@code plan} keeps every threadgroup within it. */
    record Replanned(ThreadgroupLimitError error, SdpaPlan plan) implements Replan {}

    /** The error is not MLX's threadgroup limit: it is the request's error as it is. */
    record NotALimitError(String mlxError) implements Replan {}

    /**
     * MLX reported a limit the plan already kept to ({@code planned} threads at most): planning again would change
     * nothing, so the error is the request's error (and not a reason to retry).
     */
    record NoProgress(ThreadgroupLimitError error, int planned) implements Replan {}
}
