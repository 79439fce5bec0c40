package dev.forkpoint.backend;

/**
 * A backend's handle to an activation matrix of {@code tokens} rows by {@code width} columns. On an eager backend
 * it holds values; on a lazy one (MLX) it is a node of a graph that is evaluated when logits are read.
 */
public interface Activation {
    int tokens();
    int width();
}
