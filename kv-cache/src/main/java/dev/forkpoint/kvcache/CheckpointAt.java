package dev.forkpoint.kvcache;

/** A checkpoint of the state after exactly {@code offset} tokens (positions [0, offset) processed). */
public record CheckpointAt(int offset, Checkpoint checkpoint) {
    public CheckpointAt {
        if (offset < 1) throw new IllegalArgumentException("checkpoint offset must be >= 1, got " + offset);
        if (checkpoint == null) throw new IllegalArgumentException("checkpoint at " + offset + " is missing");
    }
}
