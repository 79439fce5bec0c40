package dev.forkpoint.tensor;

import java.lang.foreign.MemorySegment;

/**
 * A dense or block-quantised tensor of one {@link GgmlType}, wherever its bytes are (a GGUF mapping, a safetensors
 * mapping, a heap segment). {@code shape} is in GGML order: {@code shape[0]} is the number of elements in a row
 * (contiguous), {@code shape[1]} the number of rows, and so on; {@code data} holds the rows one after another in the
 * type's encoding.
 */
public record GgmlTensor(String name, GgmlType type, long[] shape, MemorySegment data) implements WeightSource {

    public long elementCount() {
        long n = 1;
        for (long d : shape) n *= d;
        return n;
    }

    /** Elements per row ({@code shape[0]}). */
    public int rowLength() { return Math.toIntExact(shape[0]); }

    /** Number of rows: the product of every dimension after the first. */
    public int rows() { return Math.toIntExact(elementCount() / shape[0]); }

    public String shapeString() {
        var sb = new StringBuilder("[");
        for (int i = 0; i < shape.length; i++) {
            if (i > 0) sb.append(", ");
            sb.append(shape[i]);
        }
        return sb.append(']').toString();
    }
}
