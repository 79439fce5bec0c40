package dev.forkpoint.backend;

import dev.forkpoint.kvcache.Checkpoint;

/**
 * An immutable copy of one sequence's recurrent state (every linear layer's convolution window and delta-rule matrix)
 * after exactly some number of tokens: what the prefix cache stores as a {@link Checkpoint} at a fork point and what
 * {@link KvStore#restore} copies back. Made by {@link KvStore#snapshot()} of the backend that restores it.
 */
public interface RecurrentSnapshot extends Checkpoint {
    RecurrentLayout layout();
}
