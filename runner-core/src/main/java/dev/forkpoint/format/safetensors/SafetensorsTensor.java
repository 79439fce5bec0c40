package dev.forkpoint.format.safetensors;

import java.nio.file.Path;

/**
 * One tensor of a safetensors file. {@code shape} is in row-major (PyTorch/NumPy) order: the last dimension is
 * contiguous. {@code data} is a slice of the memory-mapped file, exactly elements × dtype size bytes.
 */
public record SafetensorsTensor(Path file, String name, SafetensorsDtype dtype, long[] shape,
                                java.lang.foreign.MemorySegment data) {

    public long elementCount() {
        long n = 1;
        for (long d : shape) n *= d;
        return n;
    }

    /** "[2048, 512]". */
    public String shapeString() { return java.util.Arrays.toString(shape); }
}
