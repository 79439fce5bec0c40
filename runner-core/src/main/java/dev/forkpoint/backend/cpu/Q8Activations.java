package dev.forkpoint.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Activations quantised to 8 bits the way llama.cpp does before an integer dot product with quantised weights.
 * {@code q} holds the quants (one short each, n·cols of them, token-major), {@code d} one scale per block.
 * <ul>
 * <li>Q8_0 blocks of 32 (x86 quantize_row_q8_0): d = fp16(amax / 127), q = round-half-even(x · 127 / amax).</li>
 * <li>Q8_K blocks of 256 (quantize_row_q8_K_ref): with max the value of largest magnitude, iscale = −127 / max,
 * q = min(127, round-half-even(iscale · x)), d = 1 / iscale (a float); {@code sums} holds Σq per 16 values.</li>
 * </ul>
 * Q8_0 activations have no {@code sums} (null). Inside an engine step the arrays come from the step's
 * {@link StepBuffers} (a decode loop quantises into the same arrays every step): they live for the multiply that made them.
 */
record Q8Activations(short[] q, float[] d, short[] sums, int blockSize) {
    private static final VectorSpecies<Float> F = KernelSupport.F;
    private static final VectorSpecies<Short> S = KernelSupport.S;
    private static final int L = KernelSupport.L;
    private static final float ROUNDER = 12582912f; // 1.5 · 2^23: adding and subtracting it rounds half to even

    /** Q8_0 quantisation of n rows of cols values. */
    static Q8Activations q8_0(float[] x, int n, int cols) {
        int blocks = n * cols / 32;
        short[] q = StepBuffers.shortsHere(n * cols);
        float[] d = StepBuffers.floatsHere(blocks);
        for (int b = 0; b < blocks; b++) {
            int o = b * 32;
            FloatVector m = FloatVector.fromArray(F, x, o).abs();
            for (int j = L; j < 32; j += L) m = m.max(FloatVector.fromArray(F, x, o + j).abs());
            float amax = m.reduceLanes(VectorOperators.MAX);
            d[b] = Float.float16ToFloat(Float.floatToFloat16(amax / 127f));
            float id = amax != 0 ? 127f / amax : 0f;
            for (int j = 0; j < 32; j += L) round(FloatVector.fromArray(F, x, o + j).mul(id)).intoArray(q, o + j);
        }
        return new Q8Activations(q, d, null, 32);
    }

    private static ShortVector round(FloatVector v) {
        return (ShortVector) v.add(ROUNDER).sub(ROUNDER).convertShape(VectorOperators.F2S, S, 0);
    }

    /** Q8_K quantisation of n rows of cols values (cols a multiple of 256). */
    static Q8Activations q8_K(float[] x, int n, int cols) {
        int blocks = n * cols / 256;
        short[] q = StepBuffers.shortsHere(n * cols);
        float[] d = StepBuffers.floatsHere(blocks);
        short[] sums = StepBuffers.shortsHere(blocks * 16);
        for (int b = 0; b < blocks; b++) {
            int o = b * 256;
            FloatVector m = FloatVector.fromArray(F, x, o).abs();
            for (int j = L; j < 256; j += L) m = m.max(FloatVector.fromArray(F, x, o + j).abs());
            float amax = m.reduceLanes(VectorOperators.MAX);
            if (amax == 0) continue;
            float max = 0;
            for (int j = 0; j < 256; j++) {
                if (Math.abs(x[o + j]) == amax) {
                    max = x[o + j];
                    break;
                }
            }
            float iscale = -127f / max;
            for (int g = 0; g < 256; g += 16) {
                ShortVector sum = ShortVector.zero(S); // |Σ| ≤ 16 · 127: exact in 16 bits
                for (int j = g; j < g + 16; j += L) {
                    ShortVector v = round(FloatVector.fromArray(F, x, o + j).mul(iscale)).min((short) 127);
                    v.intoArray(q, o + j);
                    sum = sum.add(v);
                }
                sums[b * 16 + g / 16] = sum.reduceLanes(VectorOperators.ADD);
            }
            d[b] = 1 / iscale;
        }
        return new Q8Activations(q, d, sums, 256);
    }

    /**
     * The quants as bytes (each fits: |q| ≤ 127, Q8_0 and Q8_K alike), for the native kernels; the Q8_K ones take
     * {@link #sums} too, as they are (int16).
     */
    byte[] codes() {
        byte[] b = StepBuffers.bytesHere(q.length);
        for (int i = 0; i < b.length; i++) b[i] = (byte) q[i];
        return b;
    }

    /** The activations these quants stand for, q · d, as floats (token-major like the input). */
    float[] dequantized() {
        float[] out = StepBuffers.floatsHere(q.length);
        for (int b = 0; b < q.length / blockSize; b++) {
            float scale = d[b];
            for (int i = b * blockSize; i < (b + 1) * blockSize; i += L) {
                ((FloatVector) ShortVector.fromArray(S, q, i).convertShape(VectorOperators.S2F, F, 0)).mul(scale).intoArray(out, i);
            }
        }
        return out;
    }
}
