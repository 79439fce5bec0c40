package dev.forkpoint.engine;

/** Told how far loading a model has come, for a progress bar. */
@FunctionalInterface
public interface LoadProgress {
    LoadProgress NONE = (done, total) -> {};

    /** {@code done} of {@code total} tensors are prepared. */
    void update(int done, int total);
}
