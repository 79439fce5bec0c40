package dev.forkpoint.bench;

import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.*;

class TensorPlanTest {
    private static final ModelShape S = ModelShape.LLAMA_3_2_1B;

    @Test
    void llama32OneBHasItsPublishedParameterCount() {
        List<TensorPlan> plans = TensorPlan.forModel(S, FileType.Q8_0, false);
        assertEquals(2 + 9 * 16, plans.size());
        // Llama-3.2-1B: 1,235,814,400 parameters (tied embeddings).
        assertEquals(1_235_814_400L, plans.stream().mapToLong(TensorPlan::elements).sum());
    }

    @Test
    void fileSizesMatchTheReferenceFiles() {
        // The Q8_0 and Q4_0 files of this shape that llama.cpp was measured on are 1.32 GB and 0.70 GB.
        assertEquals(1.32e9, bytes(FileType.Q8_0), 0.01e9);
        assertEquals(0.70e9, bytes(FileType.Q4_0), 0.01e9);
    }

    private static double bytes(FileType t) {
        return TensorPlan.forModel(S, t, true).stream().mapToLong(TensorPlan::bytes).sum();
    }

    @Test
    void q4KmUsesQ6KForTheEmbeddingAndHalfOfTheAttnVAndFfnDownLayers() {
        List<TensorPlan> plans = TensorPlan.forModel(S, FileType.Q4_K_M, true);
        int[] moreBits = {0, 1, 4, 7, 10, 13, 14, 15};
        for (TensorPlan p : plans) {
            GgmlType expected = switch (p.role()) {
                case ROPE_FREQS, ATTN_NORM, FFN_NORM, OUTPUT_NORM -> GgmlType.F32;
                case TOKEN_EMBD -> GgmlType.Q6_K;
                case ATTN_V, FFN_DOWN -> IntStream.of(moreBits).anyMatch(l -> l == p.layer()) ? GgmlType.Q6_K : GgmlType.Q4_K;
                default -> GgmlType.Q4_K;
            };
            assertEquals(expected, p.type(), p.name());
        }
        assertEquals(1 + 2 * 8, plans.stream().filter(p -> p.type() == GgmlType.Q6_K).count());
    }

    @Test
    void ropeFreqsHoldLlama3ScalingFactors() {
        float[] f = S.ropeScaling().orElseThrow().factors(S.headDim(), S.ropeFreqBase());
        assertEquals(32, f.length);
        // Short wavelengths keep their frequency, long ones are slowed by the full factor, smoothly in between.
        assertEquals(1f, f[0]);
        assertEquals(32f, f[31]);
        for (int i = 1; i < f.length; i++) assertTrue(f[i] >= f[i - 1], "non-decreasing at " + i);
        assertTrue(IntStream.range(0, 32).anyMatch(i -> f[i] > 1 && f[i] < 32), "an interpolated band exists");
        // Pair i's wavelength 2π·base^(2i/64) against the bounds 8192/4 = 2048 and 8192/1 = 8192.
        for (int i = 0; i < 32; i++) {
            double wavelen = 2 * Math.PI * Math.pow(500_000, 2.0 * i / 64);
            if (wavelen < 2048) assertEquals(1f, f[i], "pair " + i);
            if (wavelen > 8192) assertEquals(32f, f[i], "pair " + i);
        }
    }
}
