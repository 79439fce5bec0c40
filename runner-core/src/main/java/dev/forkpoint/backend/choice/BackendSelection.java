package dev.forkpoint.backend.choice;

import dev.forkpoint.backend.BackendChoice;

/**
 * What a {@link BackendChoice} resolved to and why, for the one log line a load writes
 * ("backend cpu (auto: MLX runs only on macOS arm64, this is Linux amd64)").
 *
 * @param backend the backend that runs: {@link BackendChoice#CPU} or {@link BackendChoice#MLX}, never AUTO
 * @param reason  why it was chosen
 * @param auto    whether {@code auto} chose it (and may still fall back to the CPU for an architecture MLX does not run)
 */
public record BackendSelection(BackendChoice backend, String reason, boolean auto) {
    public BackendSelection {
        if (backend == null || backend == BackendChoice.AUTO) throw new IllegalArgumentException("a selection names a concrete backend, got " + backend);
    }

    /** "backend cpu (reason)". */
    public String describe() {
        return "backend " + backend.label() + " (" + reason + ")";
    }
}
