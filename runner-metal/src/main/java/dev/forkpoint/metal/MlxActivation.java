package dev.forkpoint.metal;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.metal.mlxc.MlxArray;

/**
 * An activation on the MLX backend: a node of the lazy MLX graph, float32 [tokens, width], evaluated when logits are
 * read (or, for k and v, by the attention op that stores them). Owned by the forward pass that made it: its array is
 * freed when that pass's logits are read, or when a step begins or rolls back on one of the backend's stores.
 */
record MlxActivation(MlxArray array, int tokens, int width) implements Activation {}
