package dev.forkpoint.backend.choice;

import dev.forkpoint.backend.BackendChoice;

/**
 * What a {@link BackendChoice} resolved to and why, for the one log line a load writes
 * ("backend cpu (auto: MLX backend not built in this version)").
 *
 * @param backend the backend that runs: {@link BackendChoice#CPU} or {@link BackendChoice#MLX}, never AUTO
 * @param reason  why it was chosen
 */
public record BackendSelection(BackendChoice backend, String reason) {
    public BackendSelection {
        if (backend == null || backend == BackendChoice.AUTO) throw new IllegalArgumentException("a selection names a concrete backend, got " + backend);
    }

    /** "backend cpu (reason)". */
    public String describe() {
        return "backend " + backend.label() + " (" + reason + ")";
    }
}
