package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Weight;

/**
 * A weight on the CPU backend: a matrix read in place from the mapped file, or, for vectors (norm gammas,
 * biases — a few KB each), the values as floats.
 */
record CpuWeight(String name, String typeName, int rows, int cols, PackedMatrix matrix, float[] vector) implements Weight {

    float[] requireVector() {
        if (vector == null) throw new IllegalStateException(name + " is a matrix, a vector was expected");
        return vector;
    }
}
