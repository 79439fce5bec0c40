package dev.forkpoint.backend;

/**
 * A backend's handle to a weight tensor it holds (mapped in place on the CPU, uploaded on a GPU).
 * A matrix has {@code rows} outputs of {@code cols} inputs each; a vector (a norm's gamma, a bias) has one row.
 */
public interface Weight {
    String name();
    /** The stored type's name: a GGML type ("Q4_0", "F32") or an MLX affine format ("affine 4-bit g64"). */
    String typeName();
    int rows();
    int cols();
}
