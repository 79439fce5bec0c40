package dev.forkpoint.backend.cpu;

import dev.forkpoint.backend.Rope;
import dev.forkpoint.kvcache.KvElementType;
import dev.forkpoint.kvcache.KvLayout;
import dev.forkpoint.kvcache.PagePool;
import dev.forkpoint.kvcache.SequenceKv;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The CPU ops against plain double-precision loops written from the definitions. */
class CpuOpsTest {
    static final WorkerPool POOL = new WorkerPool(2);
    static final CpuOps OPS = new CpuOps(POOL);

    @AfterAll
    static void close() { POOL.close(); }

    static float[] random(SplittableRandom r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) (r.nextDouble() * 2 - 1);
        return v;
    }

    static CpuWeight vector(float[] v) {
        return new CpuWeight("gamma", "F32", 1, v.length, null, v);
    }

    @Test
    void ropeRotatesNormalAndNeoxPairs() {
        SplittableRandom r = new SplittableRandom(1);
        int headDim = 8, heads = 3, tokens = 4;
        float[] x = random(r, tokens * heads * headDim);
        int[] positions = {0, 5, 17, 300};
        for (boolean neox : new boolean[] {false, true}) {
            for (int dims : new int[] {8, 4}) {
                Rope rope = new Rope(dims, 10000, neox, dims == 4 ? new float[] {1f, 4f} : null);
                float[] got = ((CpuActivation) OPS.rope(new CpuActivation(x, tokens, heads * headDim), headDim, positions, rope)).data();
                for (int t = 0; t < tokens; t++) {
                    for (int h = 0; h < heads; h++) {
                        int base = (t * heads + h) * headDim;
                        boolean[] rotated = new boolean[headDim];
                        for (int i = 0; i < dims / 2; i++) {
                            double theta = Math.pow(10000, -2.0 * i / dims) / (dims == 4 ? new double[] {1, 4}[i] : 1);
                            double angle = positions[t] * theta;
                            int a = neox ? i : 2 * i, b = neox ? i + dims / 2 : 2 * i + 1;
                            rotated[a] = rotated[b] = true;
                            double x0 = x[base + a], x1 = x[base + b];
                            assertEquals(x0 * Math.cos(angle) - x1 * Math.sin(angle), got[base + a], 1e-5);
                            assertEquals(x0 * Math.sin(angle) + x1 * Math.cos(angle), got[base + b], 1e-5);
                        }
                        for (int i = 0; i < headDim; i++) if (!rotated[i]) assertEquals(x[base + i], got[base + i]);
                    }
                }
            }
        }
    }

    @Test
    void attentionIsCausalGroupedQueryAttentionOverStoredAndNewPositions() {
        SplittableRandom r = new SplittableRandom(2);
        int heads = 4, kvHeads = 2, headDim = 16, kvDim = kvHeads * headDim;
        int past = 300, tokens = 5, len = past + tokens;   // crosses a KV page boundary
        float[] allK = random(r, len * kvDim), allV = random(r, len * kvDim);
        for (KvElementType type : new KvElementType[] {KvElementType.F32, KvElementType.F16}) {   // quantised KV: QuantisedKvAttentionTest
        try (PagePool pagePool = new PagePool(KvLayout.of(2, kvDim, type), 1 << 20); SequenceKv seq = pagePool.newSequence()) {
        CpuKvStore kv = new CpuKvStore(seq, null);
        kv.begin(past);
        for (int p = 0; p < past; p++) kv.write(1, p, allK, p * kvDim, allV, p * kvDim);
        kv.commit();
        kv.begin(tokens);
        float[] q = random(r, tokens * heads * headDim);
        float[] newK = java.util.Arrays.copyOfRange(allK, past * kvDim, len * kvDim);
        float[] newV = java.util.Arrays.copyOfRange(allV, past * kvDim, len * kvDim);
        float[] got = ((CpuActivation) OPS.attention(new CpuActivation(q, tokens, heads * headDim),
                new CpuActivation(newK, tokens, kvDim), new CpuActivation(newV, tokens, kvDim), kv, 1, past,
                heads, kvHeads, headDim)).data();
        kv.commit();
        assertEquals(len, kv.length());
        double tolerance = type == KvElementType.F32 ? 1e-5 : 2e-3;   // F16 rounds K and V to 11 significant bits
        for (int t = 0; t < tokens; t++) {
            for (int h = 0; h < heads; h++) {
                int g = h / (heads / kvHeads), visible = past + t + 1;
                double[] s = new double[visible];
                double max = Double.NEGATIVE_INFINITY, sum = 0;
                for (int p = 0; p < visible; p++) {
                    for (int i = 0; i < headDim; i++) s[p] += (double) q[(t * heads + h) * headDim + i] * allK[p * kvDim + g * headDim + i];
                    s[p] /= Math.sqrt(headDim);
                    max = Math.max(max, s[p]);
                }
                for (int p = 0; p < visible; p++) sum += s[p] = Math.exp(s[p] - max);
                for (int i = 0; i < headDim; i++) {
                    double o = 0;
                    for (int p = 0; p < visible; p++) o += s[p] / sum * allV[p * kvDim + g * headDim + i];
                    assertEquals(o, got[(t * heads + h) * headDim + i], tolerance, type + " t " + t + " head " + h + " dim " + i);
                }
            }
        }
        }
        }
    }

    @Test
    void rmsNormPerRowAndPerHead() {
        SplittableRandom r = new SplittableRandom(3);
        float[] x = random(r, 3 * 64);
        float[] gamma = random(r, 16);
        float[] got = ((CpuActivation) OPS.rmsNormHeads(new CpuActivation(x, 3, 64), vector(gamma), 16, 1e-6f)).data();
        for (int group = 0; group < 12; group++) {
            double ss = 0;
            for (int i = 0; i < 16; i++) ss += (double) x[group * 16 + i] * x[group * 16 + i];
            double scale = 1 / Math.sqrt(ss / 16 + 1e-6);
            for (int i = 0; i < 16; i++) assertEquals(x[group * 16 + i] * scale * gamma[i], got[group * 16 + i], 1e-5);
        }
        assertThrows(IllegalArgumentException.class, () -> OPS.rmsNorm(new CpuActivation(x, 3, 64), vector(gamma), 1e-6f));
    }

    @Test
    void swigluIsSiluOfGateTimesUp() {
        SplittableRandom r = new SplittableRandom(4);
        float[] g = random(r, 40), u = random(r, 40);
        float[] got = ((CpuActivation) OPS.swiglu(new CpuActivation(g, 2, 20), new CpuActivation(u, 2, 20))).data();
        for (int i = 0; i < 40; i++) assertEquals(g[i] / (1 + Math.exp(-g[i])) * u[i], got[i], 1e-6);
    }

    @Test
    void attentionWritesOnlyInsideTheOpenStepAndRollbackRestoresTheStore() {
        int kvDim = 4;
        try (PagePool pagePool = new PagePool(KvLayout.of(1, kvDim, KvElementType.F32), 1 << 16); SequenceKv seq = pagePool.newSequence()) {
            CpuKvStore kv = new CpuKvStore(seq, null);
            CpuActivation one = new CpuActivation(new float[kvDim], 1, kvDim);
            IllegalStateException noStep = assertThrows(IllegalStateException.class,
                    () -> OPS.attention(one, one, one, kv, 0, 0, 1, 1, kvDim));
            assertEquals("attention at positions 0…0 but the open kv step is [0, 0)", noStep.getMessage());
            kv.begin(1);
            OPS.attention(one, one, one, kv, 0, 0, 1, 1, kvDim);
            kv.commit();
            kv.begin(2);
            assertThrows(IllegalStateException.class, () -> OPS.attention(one, one, one, kv, 0, 1, 1, 1, kvDim),
                    "a step of 2 is not written by 1 token");
            kv.rollback();
            assertEquals(1, kv.length());
            assertEquals(0, kv.pending());
            var e = assertThrows(dev.forkpoint.kvcache.KvBoundsException.class, () -> kv.write(0, 1, new float[4], 0, new float[4], 0));
            assertEquals("sequence " + seq.id() + ": write at offset 1 with no open step (1 stored positions)", e.getMessage());
        }
    }
}
