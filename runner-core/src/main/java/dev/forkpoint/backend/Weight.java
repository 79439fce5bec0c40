package dev.forkpoint.backend;

import dev.forkpoint.tensor.GgmlType;

/**
 * A backend's handle to a weight tensor it holds (mapped in place on the CPU, uploaded on a GPU).
 * A matrix has {@code rows} outputs of {@code cols} inputs each; a vector (a norm's gamma, a bias) has one row.
 */
public interface Weight {
    String name();
    GgmlType type();
    int rows();
    int cols();
}
