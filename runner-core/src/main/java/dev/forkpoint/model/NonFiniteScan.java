package dev.forkpoint.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Finds the first element of a float tensor (F32, F16 or BF16, little-endian) that is NaN or infinite, by its bits
 * alone (exponent all ones). Used to explain a model that produces no finite logits: a tensor whose type was
 * mislabelled, or whose bytes were damaged, shows up here, named.
 */
final class NonFiniteScan {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private NonFiniteScan() {}

    /** The index of the first non-finite F32 element of {@code data}, or -1. */
    static long f32(MemorySegment data) {
        long n = data.byteSize() / 4;
        for (long i = 0; i < n; i++) if ((data.get(I32, 4 * i) & 0x7F80_0000) == 0x7F80_0000) return i;
        return -1;
    }

    /** The index of the first non-finite IEEE half of {@code data}, or -1. */
    static long f16(MemorySegment data) {
        long n = data.byteSize() / 2;
        for (long i = 0; i < n; i++) if ((data.get(I16, 2 * i) & 0x7C00) == 0x7C00) return i;
        return -1;
    }

    /** The index of the first non-finite bfloat16 of {@code data}, or -1. */
    static long bf16(MemorySegment data) {
        long n = data.byteSize() / 2;
        for (long i = 0; i < n; i++) if ((data.get(I16, 2 * i) & 0x7F80) == 0x7F80) return i;
        return -1;
    }

    /** The index of the first byte of {@code data} equal to {@code value} (an E8M0 scale of 255 is +∞ in MLX), or -1. */
    static long byteValue(MemorySegment data, byte value) {
        long n = data.byteSize();
        for (long i = 0; i < n; i++) if (data.get(ValueLayout.JAVA_BYTE, i) == value) return i;
        return -1;
    }
}
