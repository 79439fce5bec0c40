package dev.forkpoint.format.gguf;

import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;

import java.lang.foreign.MemorySegment;

/**
 * One tensor of a GGUF file. {@code shape} is in GGML order: {@code shape[0]} is the number of elements in a
 * row (contiguous), {@code shape[1]} the number of rows, and so on. {@code data} is a slice of the memory-mapped
 * file (never a heap copy), exactly {@code byteSize} long.
 */
public record GgufTensor(String name, GgmlType type, long[] shape, long offset, MemorySegment data) {

    public long elementCount() { return source().elementCount(); }

    public long byteSize() { return data.byteSize(); }

    /** This tensor as a backend's weight description: name, type, shape and the mapped bytes (no copy). */
    public GgmlTensor source() { return new GgmlTensor(name, type, shape, data); }

    /** Elements per row ({@code shape[0]}). */
    public int rowLength() { return source().rowLength(); }

    /** Number of rows: the product of every dimension after the first. */
    public int rows() { return source().rows(); }

    public String shapeString() { return source().shapeString(); }
}
