package dev.forkpoint.backend.cpu;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.GgmlType;
import dev.forkpoint.tensor.HostMatrix;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.*;

/** The CPU backend's one weight entry point over each kind of {@link dev.forkpoint.tensor.WeightSource}. */
class CpuBackendWeightTest {
    @Test
    void ggmlMatrixAndVector() {
        try (CpuBackend b = new CpuBackend(1)) {
            float[] values = {1, 2, 3, 4, 5, 6};
            CpuWeight m = (CpuWeight) b.weight(new GgmlTensor("w", GgmlType.F32, new long[] {3, 2}, MemorySegment.ofArray(values.clone())));
            assertEquals("w", m.name());
            assertEquals("F32", m.typeName());
            assertEquals(2, m.rows());
            assertEquals(3, m.cols());
            assertNull(m.vector());
            CpuWeight v = (CpuWeight) b.weight(new GgmlTensor("n", GgmlType.F32, new long[] {6}, MemorySegment.ofArray(values.clone())));
            assertEquals(1, v.rows());
            assertArrayEquals(values, v.requireVector());
        }
    }

    @Test
    void unsupportedGgmlTypeNamesTheTensorAndListsTheSupportedTypes() {
        try (CpuBackend b = new CpuBackend(1)) {
            var e = assertThrows(InvalidInputException.class, () -> b.weight(new GgmlTensor("blk.3.ffn_up.weight", GgmlType.Q5_K,
                    new long[] {256, 1}, MemorySegment.ofArray(new byte[176]))));
            assertTrue(e.getMessage().startsWith("tensor blk.3.ffn_up.weight has type Q5_K"), e::getMessage);
            assertTrue(e.getMessage().endsWith("supported tensor types: " + GgmlType.supportedNames()), e::getMessage);
        }
    }

    @Test
    void hostValuesAreCopiedAndChecked() {
        try (CpuBackend b = new CpuBackend(1)) {
            float[] values = {1, 2, 3};
            Weight w = b.weight(new HostMatrix("norm", values, 1, 3));
            values[0] = 99;
            assertArrayEquals(new float[] {1, 2, 3}, ((CpuWeight) w).requireVector());
            assertEquals("F32", w.typeName());
            CpuWeight m = (CpuWeight) b.weight(new HostMatrix("k", new float[6], 2, 3));
            assertEquals(2, m.rows());
            assertNull(m.vector());
            var e = assertThrows(IllegalArgumentException.class, () -> b.weight(new HostMatrix("bad", new float[5], 2, 3)));
            assertEquals("bad: 5 values for 2×3", e.getMessage());
        }
    }
}
